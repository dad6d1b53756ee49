"""Steps keep to their episodes through triggers that check a statement's rows at once, not a foreign key.

A foreign key checks each inserted step with its own locking lookup of the episode at commit; for an upload
of 20,000 steps that was a third of the COPY's time. Instead, on PostgreSQL:
- after each statement that inserts or updates steps, one query locks the distinct episodes they name (FOR KEY
  SHARE, as the foreign key would, so a concurrent delete waits). Episodes not there yet go, one row per
  statement, into trajectories_step_unchecked, whose deferred constraint trigger checks them at commit: then
  they must exist if steps still name them (foreign_key_violation, an IntegrityError in Django). So steps may come before their
  episodes inside a transaction, as with the deferred foreign key Django makes; the native upload path uses it.
- deleting episodes deletes their steps, as ON DELETE CASCADE would. Django deletes them first anyway
  (on_delete=CASCADE), so this acts only on deletes made behind its back, and a flush stays consistent in
  whatever order it empties the tables.

SQLite (the embedded default) gets row-level triggers with the same checks made at once, off while `PRAGMA
foreign_keys` is (Django turns it off to load fixtures, as it would a foreign key's checks). SQLite drops them
if a later migration rebuilds the steps or episodes table; tests/lab/trajectories/test_step_integrity.py
would catch it.
"""

from django.db import migrations, models

STEP, EPISODE = "trajectories_step", "trajectories_episode"

POSTGRESQL = f"""
CREATE TABLE {STEP}_unchecked (id bigserial PRIMARY KEY, episode_ids bigint[] NOT NULL);

CREATE FUNCTION {STEP}_names_episodes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  named bigint[];
  locked integer;
BEGIN
  SELECT array_agg(DISTINCT episode_id) INTO named FROM new_steps;
  PERFORM 1 FROM {EPISODE} WHERE id = ANY(named) FOR KEY SHARE;
  GET DIAGNOSTICS locked = ROW_COUNT;
  IF locked < coalesce(cardinality(named), 0) THEN
    INSERT INTO {STEP}_unchecked (episode_ids)
      SELECT array_agg(n) FROM unnest(named) AS n WHERE NOT EXISTS (SELECT 1 FROM {EPISODE} e WHERE e.id = n);
  END IF;
  RETURN NULL;
END $$;

CREATE FUNCTION {STEP}_unchecked_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  missing bigint;
BEGIN
  DELETE FROM {STEP}_unchecked WHERE id = NEW.id;
  PERFORM 1 FROM {EPISODE} WHERE id = ANY(NEW.episode_ids) FOR KEY SHARE;
  SELECT n INTO missing FROM unnest(NEW.episode_ids) AS n
   WHERE NOT EXISTS (SELECT 1 FROM {EPISODE} e WHERE e.id = n) AND EXISTS (SELECT 1 FROM {STEP} s WHERE s.episode_id = n) LIMIT 1;
  IF FOUND THEN
    RAISE foreign_key_violation USING MESSAGE = format('a step names episode %s, which does not exist', missing);
  END IF;
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER {STEP}_unchecked_at_commit AFTER INSERT ON {STEP}_unchecked
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION {STEP}_unchecked_at_commit();

CREATE TRIGGER {STEP}_insert_names_episodes AFTER INSERT ON {STEP}
  REFERENCING NEW TABLE AS new_steps FOR EACH STATEMENT EXECUTE FUNCTION {STEP}_names_episodes();
CREATE TRIGGER {STEP}_update_names_episodes AFTER UPDATE ON {STEP}
  REFERENCING NEW TABLE AS new_steps FOR EACH STATEMENT EXECUTE FUNCTION {STEP}_names_episodes();

CREATE FUNCTION {EPISODE}_takes_its_steps() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM {STEP} WHERE episode_id IN (SELECT id FROM old_episodes);
  RETURN NULL;
END $$;
CREATE TRIGGER {EPISODE}_delete_takes_its_steps AFTER DELETE ON {EPISODE}
  REFERENCING OLD TABLE AS old_episodes FOR EACH STATEMENT EXECUTE FUNCTION {EPISODE}_takes_its_steps();
"""

POSTGRESQL_REVERSE = f"""
DROP TRIGGER {EPISODE}_delete_takes_its_steps ON {EPISODE};
DROP FUNCTION {EPISODE}_takes_its_steps();
DROP TRIGGER {STEP}_update_names_episodes ON {STEP};
DROP TRIGGER {STEP}_insert_names_episodes ON {STEP};
DROP FUNCTION {STEP}_names_episodes();
DROP TABLE {STEP}_unchecked;
DROP FUNCTION {STEP}_unchecked_at_commit();
"""

SQLITE = [
    f"""CREATE TRIGGER {STEP}_insert_names_episode BEFORE INSERT ON {STEP}
        WHEN (SELECT foreign_keys FROM pragma_foreign_keys) AND NOT EXISTS (SELECT 1 FROM {EPISODE} WHERE id = NEW.episode_id)
        BEGIN SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: a step names a missing episode'); END""",
    f"""CREATE TRIGGER {STEP}_update_names_episode BEFORE UPDATE OF episode_id ON {STEP}
        WHEN (SELECT foreign_keys FROM pragma_foreign_keys) AND NOT EXISTS (SELECT 1 FROM {EPISODE} WHERE id = NEW.episode_id)
        BEGIN SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: a step names a missing episode'); END""",
    f"""CREATE TRIGGER {EPISODE}_delete_takes_its_steps AFTER DELETE ON {EPISODE}
        BEGIN DELETE FROM {STEP} WHERE episode_id = OLD.id; END""",
]
SQLITE_REVERSE = [
    f"DROP TRIGGER {EPISODE}_delete_takes_its_steps",
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
