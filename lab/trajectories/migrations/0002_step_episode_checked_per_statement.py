"""Steps keep to their episodes through triggers that check a statement's rows at once, not a foreign key.

A foreign key checks each inserted step with its own locking lookup of the episode at commit; for an upload
of 20,000 steps that was a third of the COPY's time. Instead, after each statement that inserts or updates
steps, one query locks the distinct episodes they name (FOR KEY SHARE, as the foreign key would, so a
concurrent delete waits) and refuses the statement if fewer were found than named; after each statement that deletes episodes, one
query refuses it if steps still name one. Both raise foreign_key_violation (IntegrityError in Django).
Django deletes an episode's steps before the episode (on_delete=CASCADE), as it did with the constraint.

SQLite (the embedded default) gets row-level triggers with the same effect, off while `PRAGMA foreign_keys` is
(as Django turns it off to flush or load fixtures, and as a foreign key would be); they are dropped if a later
migration makes SQLite rebuild the steps or episodes table, which tests/test_step_integrity.py would catch.
"""

from django.db import migrations, models

STEP, EPISODE = "trajectories_step", "trajectories_episode"

POSTGRESQL = f"""
CREATE FUNCTION {STEP}_names_episodes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  named bigint[];
  locked integer;
  missing bigint;
BEGIN
  SELECT array_agg(DISTINCT episode_id) INTO named FROM new_steps;
  PERFORM 1 FROM {EPISODE} WHERE id = ANY(named) FOR KEY SHARE;
  GET DIAGNOSTICS locked = ROW_COUNT;
  IF locked < coalesce(cardinality(named), 0) THEN
    SELECT n INTO missing FROM unnest(named) AS n WHERE NOT EXISTS (SELECT 1 FROM {EPISODE} e WHERE e.id = n) LIMIT 1;
    RAISE foreign_key_violation USING MESSAGE = format('a step names episode %s, which does not exist', missing);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER {STEP}_insert_names_episodes AFTER INSERT ON {STEP}
  REFERENCING NEW TABLE AS new_steps FOR EACH STATEMENT EXECUTE FUNCTION {STEP}_names_episodes();
CREATE TRIGGER {STEP}_update_names_episodes AFTER UPDATE ON {STEP}
  REFERENCING NEW TABLE AS new_steps FOR EACH STATEMENT EXECUTE FUNCTION {STEP}_names_episodes();

CREATE FUNCTION {EPISODE}_leaves_no_steps() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  kept bigint;
BEGIN
  SELECT o.id INTO kept FROM old_episodes o
   WHERE EXISTS (SELECT 1 FROM {STEP} s WHERE s.episode_id = o.id) LIMIT 1;
  IF FOUND THEN
    RAISE foreign_key_violation USING MESSAGE = format('episode %s still has steps', kept);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER {EPISODE}_delete_leaves_no_steps AFTER DELETE ON {EPISODE}
  REFERENCING OLD TABLE AS old_episodes FOR EACH STATEMENT EXECUTE FUNCTION {EPISODE}_leaves_no_steps();
"""

POSTGRESQL_REVERSE = f"""
DROP TRIGGER {EPISODE}_delete_leaves_no_steps ON {EPISODE};
DROP FUNCTION {EPISODE}_leaves_no_steps();
DROP TRIGGER {STEP}_update_names_episodes ON {STEP};
DROP TRIGGER {STEP}_insert_names_episodes ON {STEP};
DROP FUNCTION {STEP}_names_episodes();
"""

SQLITE = [
    f"""CREATE TRIGGER {STEP}_insert_names_episode BEFORE INSERT ON {STEP}
        WHEN (SELECT foreign_keys FROM pragma_foreign_keys) AND NOT EXISTS (SELECT 1 FROM {EPISODE} WHERE id = NEW.episode_id)
        BEGIN SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: a step names a missing episode'); END""",
    f"""CREATE TRIGGER {STEP}_update_names_episode BEFORE UPDATE OF episode_id ON {STEP}
        WHEN (SELECT foreign_keys FROM pragma_foreign_keys) AND NOT EXISTS (SELECT 1 FROM {EPISODE} WHERE id = NEW.episode_id)
        BEGIN SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: a step names a missing episode'); END""",
    f"""CREATE TRIGGER {EPISODE}_delete_leaves_no_steps BEFORE DELETE ON {EPISODE}
        WHEN (SELECT foreign_keys FROM pragma_foreign_keys) AND EXISTS (SELECT 1 FROM {STEP} WHERE episode_id = OLD.id)
        BEGIN SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: the episode still has steps'); END""",
]
SQLITE_REVERSE = [
    f"DROP TRIGGER {EPISODE}_delete_leaves_no_steps",
    f"DROP TRIGGER {STEP}_update_names_episode",
    f"DROP TRIGGER {STEP}_insert_names_episode",
]


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        for statement in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement, params=None)  # no parameters: '%s' in format() stays as written

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("trajectories", "0001_initial"),
    ]

    operations = [
        migrations.AlterField(
            model_name="step",
            name="episode",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=models.deletion.CASCADE,
                related_name="steps",
                to="trajectories.episode",
            ),
        ),
        migrations.RunPython(
            _run({"postgresql": [POSTGRESQL], "sqlite": SQLITE}),
            _run({"postgresql": [POSTGRESQL_REVERSE], "sqlite": SQLITE_REVERSE}),
        ),
    ]
