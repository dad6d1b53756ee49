"""Step.role (indexed with the episode) and AgentConfig.team.

SQLite rebuilds the steps table to add a column with a default, and a rebuild breaks the triggers of migration
0002 (they name the table): they are dropped before and made again after, as 0002 makes them.
"""

import importlib

from django.db import migrations, models

_TRIGGERS = importlib.import_module("lab.trajectories.migrations.0002_step_episode_checked_per_statement")


def _sqlite(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "sqlite":
            for statement in statements:
                schema_editor.execute(statement, params=None)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("trajectories", "0005_import_job_on_job_base"),
    ]

    operations = [
        migrations.RunPython(_sqlite(_TRIGGERS.SQLITE_REVERSE), _sqlite(_TRIGGERS.SQLITE)),
        migrations.AddField(
            model_name="agentconfig",
            name="team",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text='The roles around this agent (environments.roles): {"critic": {"agent": ..., "every": 5}, "consultant": {...}, "harness_level": ..., "slots": {...}}; a role\'s agent is a config or the name of another agent of the project.',
            ),
        ),
        migrations.AddField(
            model_name="step",
            name="role",
            field=models.CharField(blank=True, default="", max_length=32),
        ),
        migrations.AddIndex(
            model_name="step",
            index=models.Index(fields=["episode", "role"], name="step_episode_role"),
        ),
        migrations.RunPython(_sqlite(_TRIGGERS.SQLITE), _sqlite(_TRIGGERS.SQLITE_REVERSE)),
    ]
