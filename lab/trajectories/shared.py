"""Shared context in the database: a header value many episodes hold (lab.ingest.shared) stored once per project.

    shared_contexts_store(project=p, values=values, episodes=created)   # inside the ingest's transaction
    episode_header(episode)                                             # the header as ingested (one query at most)
    for episode, header in episodes_with_headers(queryset.iterator()):  # one query per page of episodes
        ...
    shared_contexts_prune(project=p)                                    # rows no episode names any more

An episode that shares context has None at each shared path of meta["header"] and the digest in meta["shared"]
({path: sha256}); meta is the server's, so nothing an upload sends can name a digest. Every reader of a header
goes through episode_header or episodes_with_headers, which look digests up in the episode's own project only:
the same content in two projects is two rows, and neither project can reach the other's. Episodes of one page
may share the expanded values: copy before mutating them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from typing import Any, TypeVar, cast

from django.db import connection, transaction

from environments.records import Header
from lab.ingest.shared import SharedValues, header_expand
from lab.projects.models import Project
from lab.trajectories.models import Episode, SharedContext

PAGE = 200
T = TypeVar("T")


def shared_refs(episode: Episode) -> dict[str, str]:
    refs = (episode.meta or {}).get("shared")
    return refs if isinstance(refs, dict) else {}


def shared_contexts_store(*, project: Project, values: SharedValues, episodes: Iterable[Episode]) -> None:
    """Store the contexts `episodes` name (their contents from `values`) unless the project holds them. Run it in the
    transaction that stores the episodes. A content stored at the same time by another upload of the project is
    stored once (the constraint), and both uploads reference that row."""
    digests = {digest for episode in episodes for digest in shared_refs(episode).values()}
    while digests:
        held = set(SharedContext.objects.filter(project=project, sha256__in=digests).values_list("sha256", flat=True))
        new = [SharedContext(project=project, sha256=d, content=values.contents[d], size=values.sizes[d]) for d in sorted(digests - held)]
        SharedContext.objects.bulk_create(new, ignore_conflicts=True)
        # Locked until this upload commits, so that shared_contexts_prune cannot delete a row it references; a row
        # a prune deleted in the meantime is stored again.
        digests -= set(
            SharedContext.objects.filter(project=project, sha256__in=digests).select_for_update().values_list("sha256", flat=True)
        )


def episode_headers(episodes: Sequence[Episode]) -> list[Header]:
    """Each episode's header with its shared context expanded, in order: one query for all of them (none when no
    episode shares any)."""
    wanted = {(episode.project_id, digest) for episode in episodes for digest in shared_refs(episode).values()}
    contents: dict[tuple[int, str], Any] = {}
    if wanted:
        rows = SharedContext.objects.filter(project_id__in={p for p, _ in wanted}, sha256__in={d for _, d in wanted})
        contents = {(p, d): content for p, d, content in rows.values_list("project_id", "sha256", "content") if (p, d) in wanted}
    headers: list[Header] = []
    for episode in episodes:
        header = (episode.meta or {}).get("header")
        header = dict(header) if isinstance(header, dict) else {}
        refs = shared_refs(episode)
        own = {digest: contents[key] for digest in refs.values() if (key := (episode.project_id, digest)) in contents}
        # stored from a validated record (episode_store), its shared values factored out and put back here
        headers.append(cast(Header, header_expand(header, refs, own) if refs else header))
    return headers


def episode_header(episode: Episode) -> Header:
    """The record header the episode was stored with, its shared context expanded (a shallow copy, as a record's is)."""
    return episode_headers([episode])[0]


def episodes_with_headers(
    items: Iterable[T], *, episode: Callable[[T], Episode] | None = None, page: int = PAGE
) -> Iterator[tuple[T, Header]]:
    """(item, its episode's header) for each item (an episode, or what `episode` finds one in), in order; shared
    context is read once per page of `page` items."""
    iterator = iter(items)
    while chunk := list(islice(iterator, page)):
        episodes = [episode(item) for item in chunk] if episode is not None else cast(list[Episode], chunk)
        yield from zip(chunk, episode_headers(episodes), strict=True)


def shared_contexts_prune(*, project: Project) -> int:
    """Delete the project's contexts that no episode names (their episodes were deleted); returns how many.

    Safe beside an upload storing episodes: an upload locks the rows it references (shared_contexts_store), this
    locks the others first, skipping those (PostgreSQL; SQLite runs one writer at a time), and reads references
    only then; an upload that comes later waits for the lock and stores again a row deleted meanwhile.
    """
    with transaction.atomic():
        skip = connection.features.has_select_for_update_skip_locked
        held = dict(SharedContext.objects.filter(project=project).select_for_update(skip_locked=skip).values_list("sha256", "pk"))
        if not held:
            return 0
        named: set[str] = set()
        for refs in Episode.objects.filter(project=project, meta__has_key="shared").values_list("meta__shared", flat=True).iterator():
            named.update(refs.values() if isinstance(refs, dict) else ())
        unused = [pk for digest, pk in held.items() if digest not in named]
        SharedContext.objects.filter(pk__in=unused).delete()
    return len(unused)
