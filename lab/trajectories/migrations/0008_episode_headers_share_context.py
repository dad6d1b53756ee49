"""Episode headers stored before SharedContext carry their own copy of the values their upload's episodes share
(a tau2 run's info and tasks, an inspect log's plan and eval spec): each copy becomes a reference to one row per
project and content, as lab.trajectories.services stores uploads now. Idempotent: a header already converted has
None where its references point and is left as it is. Running episodes are left alone (their header still changes).
Backwards, every reference is expanded into its header again.
"""

from django.db import migrations

from lab.ingest.shared import SharedValues, header_expand

BATCH = 500


def _batches(queryset):
    last = 0
    while batch := list(queryset.filter(pk__gt=last).order_by("pk")[:BATCH]):
        last = batch[-1].pk
        yield batch


def share(apps, schema_editor):
    Episode = apps.get_model("trajectories", "Episode")
    SharedContext = apps.get_model("trajectories", "SharedContext")
    for batch in _batches(Episode.objects.exclude(status="running").only("pk", "project_id", "meta")):
        values, changed, wanted = SharedValues(), [], set()
        for episode in batch:
            header = (episode.meta or {}).get("header")
            if not isinstance(header, dict):
                continue
            stored, refs, _ = values.factor(header)
            if refs:
                episode.meta = {**episode.meta, "header": stored, "shared": {**(episode.meta.get("shared") or {}), **refs}}
                changed.append(episode)
                wanted.update((episode.project_id, digest) for digest in refs.values())
        rows = [SharedContext(project_id=p, sha256=d, content=values.contents[d], size=values.sizes[d]) for p, d in sorted(wanted)]
        SharedContext.objects.bulk_create(rows, ignore_conflicts=True)
        Episode.objects.bulk_update(changed, ["meta"])


def expand(apps, schema_editor):
    Episode = apps.get_model("trajectories", "Episode")
    SharedContext = apps.get_model("trajectories", "SharedContext")
    for batch in _batches(Episode.objects.filter(meta__has_key="shared").only("pk", "project_id", "meta")):
        digests = {d for episode in batch for d in episode.meta["shared"].values()}
        rows = SharedContext.objects.filter(project_id__in={e.project_id for e in batch}, sha256__in=digests)
        contents = {(p, d): c for p, d, c in rows.values_list("project_id", "sha256", "content")}
        for episode in batch:
            refs = episode.meta["shared"]
            own = {d: contents[(episode.project_id, d)] for d in refs.values()}
            meta = {key: value for key, value in episode.meta.items() if key != "shared"}
            episode.meta = {**meta, "header": header_expand(meta["header"], refs, own)}
        Episode.objects.bulk_update(batch, ["meta"])


class Migration(migrations.Migration):
    dependencies = [
        ("trajectories", "0007_shared_context"),
    ]

    operations = [migrations.RunPython(share, expand, elidable=False)]
