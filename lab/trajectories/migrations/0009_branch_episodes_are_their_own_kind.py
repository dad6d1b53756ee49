"""Diagnosis branches stored before branches were their own kind (issue 42, item 6) kept the diagnosed episode's
agent (source="branch", agent=the parent's), so leaderboards that go by agent counted them as that agent's or
anchor's episodes. They lose the agent, as lab.diagnoses.verification stores branches now (the header still names
the policy that played them). Idempotent; backwards is a no-op (the old link was the bug).
"""

from django.db import migrations


def branches_apart(apps, schema_editor):
    Episode = apps.get_model("trajectories", "Episode")
    Episode.objects.filter(source="branch", agent__isnull=False).update(agent=None)


class Migration(migrations.Migration):
    dependencies = [("trajectories", "0008_episode_headers_share_context")]
    operations = [migrations.RunPython(branches_apart, migrations.RunPython.noop)]
