import Foundation
import PatchCore

/// The registry schema. Patches and audit events are never deleted: a patch number is
/// never reused, and the audit chain only grows.
///
/// The tables are written once, in SQLite's spelling; `postgres` is the same text with the
/// types PostgreSQL names differently (INTEGER → BIGINT: SQLite's integers are 64-bit;
/// BLOB → BYTEA) and without SQLite's storage hint `WITHOUT ROWID`. The append-only audit
/// triggers are the one part written twice, since the two trigger languages differ.
enum Schema {
    static let version = 1

    static func statements(for dialect: SQLDialect) -> String {
        switch dialect {
        case .sqlite: return tables + sqliteOnly
        case .postgres: return postgresTables + postgresAddedColumns + postgresOnly
        }
    }

    /// Columns added to a table after it shipped, in the order they were added. Each is added
    /// where it is missing when the registry opens: by the script on PostgreSQL (`ADD COLUMN IF
    /// NOT EXISTS`), by `addMissingColumns` on SQLite, which has no such clause. Either way an
    /// added column is the table's last, so `db copy`'s positional rows line up on both.
    static let addedColumns: [(table: String, column: String, type: String)] = [
        // The token whose holder issued this one (POST /v1/tokens); revoking a token revokes
        // every token issued from it (Registry.revokeToken). NULL: issued by patchctl.
        ("tokens", "parent", "TEXT"),
        // When `keys undelegate` retired the role (NULL: in force). The row stays: snapshot
        // keeps listing the role's last version (a client refuses a snapshot that drops a
        // role it trusted), and a later `keys delegate` of the channel takes the name up again.
        ("delegations", "removed_at", "TEXT"),
    ]

    static var postgresAddedColumns: String {
        addedColumns.map { "ALTER TABLE \($0.table) ADD COLUMN IF NOT EXISTS \($0.column) \($0.type);\n" }.joined()
    }

    /// SQLite's half of `addedColumns`: each missing column is added in a write transaction
    /// that looks again first, so two processes opening an older registry at once add it once.
    static func addMissingColumns(_ db: any SQLStore) throws {
        func present(_ added: (table: String, column: String, type: String)) throws -> Bool {
            try db.query("SELECT count(*) FROM pragma_table_info(?) WHERE name = ?", [.text(added.table), .text(added.column)]) { $0.int(0) }.first != 0
        }
        for added in addedColumns where try !present(added) {
            try db.transaction {
                if try !present(added) { try db.execute("ALTER TABLE \(added.table) ADD COLUMN \(added.column) \(added.type)") }
            }
        }
    }

    /// Who a channel declared by the upgrade is recorded as created by (`channels.created_by`).
    static let upgradeActor = "hotpatch upgrade"

    /// The migration to declared channels (issue 42): a registry from before the `channels`
    /// table keeps working unchanged, so each app gets `production` and every channel it
    /// already uses: one with a patch (a staged rollout's patch among them), a delegation or a
    /// guard, or one a change waiting for signatures names (approving it must still work).
    ///
    /// It runs when the table is empty and apps exist, which is only ever an upgraded registry:
    /// `createApp` declares production with the app in one transaction. So it needs no marker,
    /// and an upgrade killed between creating the table and filling it (SQLite creates tables
    /// outside this transaction) fills it on the next open. One read when there is nothing to do.
    /// Not audited: nothing was declared by anyone; the rows name `upgradeActor`.
    static func declareChannelsInUse(_ db: any SQLStore, now: Date = Date()) throws {
        func needed() throws(StorageError) -> Bool {
            try db.query("SELECT (SELECT count(*) FROM (SELECT 1 FROM channels LIMIT 1) c), (SELECT count(*) FROM (SELECT 1 FROM apps LIMIT 1) a)") {
                $0.int(0) == 0 && $0.int(1) > 0
            }.first ?? false
        }
        guard try needed() else { return }
        let fill = { () throws in
            guard try needed() else { return }
            let time = TUFTime.format(now)
            try db.run("""
                INSERT INTO channels(app, name, created_at, created_by)
                SELECT used.app, used.channel, ?, ? FROM (
                    SELECT name AS app, 'production' AS channel FROM apps
                    UNION SELECT app, channel FROM patch_releases
                    UNION SELECT app, channel FROM delegations
                    UNION SELECT app, channel FROM patch_guards
                ) used WHERE EXISTS (SELECT 1 FROM apps WHERE apps.name = used.app)
                ON CONFLICT DO NOTHING
                """, [.text(time), .text(upgradeActor)])
            // A pending change's channels are in its stored arguments (JSON), read here rather than
            // in SQL, which the two databases would spell differently.
            let pending = try db.query("SELECT app, change FROM pending_changes WHERE state = 'pending'") { ($0.text(0), $0.text(1)) }
            for (app, change) in pending {
                guard let json = try? JSONParser.parse(change) else { continue }
                for key in ["channel", "from", "to"] {
                    guard let name = json[key]?.stringValue, let channel = try? ChannelName(name) else { continue }
                    try db.run("INSERT INTO channels(app, name, created_at, created_by) VALUES (?,?,?,?) ON CONFLICT DO NOTHING",
                               [.text(app), .text(channel.rawValue), .text(time), .text(upgradeActor)])
                }
            }
        }
        // On PostgreSQL this runs inside the schema script's transaction, with the table's creation.
        if db.inTransaction { try fill() } else { try db.transaction(fill) }
    }

    static var postgresTables: String {
        var text = tables
        for (sqlite, postgres) in [(" INTEGER", " BIGINT"), (" BLOB", " BYTEA"), (") WITHOUT ROWID;", ");")] {
            text = text.replacingOccurrences(of: sqlite, with: postgres)
        }
        return text
    }

    static let tables = """
    CREATE TABLE IF NOT EXISTS schema_info(version INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS apps(
        name TEXT PRIMARY KEY,
        encrypted INTEGER NOT NULL,
        content_key_id TEXT,
        created_at TEXT NOT NULL,
        created_by TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS blobs(
        sha256 TEXT PRIMARY KEY,
        bytes BLOB NOT NULL
    );
    CREATE TABLE IF NOT EXISTS patches(
        app TEXT NOT NULL REFERENCES apps(name),
        app_version TEXT NOT NULL,
        number INTEGER NOT NULL CHECK(number >= 1),
        rollout INTEGER NOT NULL CHECK(rollout BETWEEN 0 AND 100),
        state TEXT NOT NULL CHECK(state IN ('active', 'revoked')),
        length INTEGER NOT NULL,
        sha256 TEXT NOT NULL,
        md5 TEXT NOT NULL,
        served_length INTEGER NOT NULL,
        served_sha256 TEXT NOT NULL REFERENCES blobs(sha256),
        served_md5 TEXT NOT NULL,
        content_key_id TEXT,
        published_at TEXT NOT NULL,
        published_by TEXT NOT NULL,
        revoked_at TEXT,
        revoked_by TEXT,
        PRIMARY KEY(app, app_version, number)
    );
    CREATE TABLE IF NOT EXISTS metadata(
        app TEXT NOT NULL REFERENCES apps(name),
        role TEXT NOT NULL,
        version INTEGER NOT NULL,
        bytes BLOB NOT NULL,
        expires TEXT NOT NULL,
        PRIMARY KEY(app, role, version)
    );
    CREATE TABLE IF NOT EXISTS audit(
        seq INTEGER PRIMARY KEY,
        at TEXT NOT NULL,
        app TEXT NOT NULL,
        actor TEXT NOT NULL,
        action TEXT NOT NULL,
        details TEXT NOT NULL,
        prev TEXT NOT NULL,
        hash TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS throttle(
        app TEXT PRIMARY KEY REFERENCES apps(name),
        min_interval INTEGER NOT NULL CHECK(min_interval >= 0),
        ip_rate INTEGER NOT NULL CHECK(ip_rate >= 0)
    );
    CREATE TABLE IF NOT EXISTS tokens(
        id TEXT PRIMARY KEY,
        hash TEXT NOT NULL UNIQUE,
        app TEXT,
        role TEXT NOT NULL CHECK(role IN ('publisher', 'auditor')),
        name TEXT NOT NULL,
        created_at TEXT NOT NULL,
        created_by TEXT NOT NULL,
        revoked_at TEXT
    );
    -- Added after schema 1 shipped; additive, so older registries gain it on open.
    CREATE TABLE IF NOT EXISTS jspatch_keys(
        app TEXT PRIMARY KEY REFERENCES apps(name),
        bits INTEGER NOT NULL,
        public_key_pem TEXT NOT NULL,
        public_key_sha256 TEXT NOT NULL,
        created_at TEXT NOT NULL,
        created_by TEXT NOT NULL
    );
    -- Why a patch was revoked (`revoke --message`); additive like patch_releases.
    CREATE TABLE IF NOT EXISTS patch_revocations(
        app TEXT NOT NULL,
        app_version TEXT NOT NULL,
        number INTEGER NOT NULL,
        message TEXT NOT NULL,
        PRIMARY KEY(app, app_version, number),
        FOREIGN KEY(app, app_version, number) REFERENCES patches(app, app_version, number)
    );
    -- Added with channels; additive: a patch without a row here is a production patch
    -- without release notes (every patch of a registry from before channels).
    CREATE TABLE IF NOT EXISTS patch_releases(
        app TEXT NOT NULL,
        app_version TEXT NOT NULL,
        number INTEGER NOT NULL,
        channel TEXT NOT NULL,
        message TEXT,
        promoted_channel TEXT,
        promoted_patch INTEGER,
        promoted_sha256 TEXT,
        PRIMARY KEY(app, app_version, number),
        FOREIGN KEY(app, app_version, number) REFERENCES patches(app, app_version, number)
    );
    -- `rollback --to N`: the patch republishes patch N's plaintext (same channel); additive.
    CREATE TABLE IF NOT EXISTS patch_rollbacks(
        app TEXT NOT NULL,
        app_version TEXT NOT NULL,
        number INTEGER NOT NULL,
        to_patch INTEGER NOT NULL,
        to_sha256 TEXT NOT NULL,
        PRIMARY KEY(app, app_version, number),
        FOREIGN KEY(app, app_version, number) REFERENCES patches(app, app_version, number)
    );
    -- Device reports (issue 12); additive. A device is kept only as 128 bits of the SHA-256
    -- of its ID. WITHOUT ROWID: the key is the row, so a million devices' rows are stored once,
    -- not once in the table and again in its primary-key index.
    -- report_events: (device, event id) pairs already counted, so a resend counts once; kept
    -- as 128 bits of SHA-256 over both, pruned after a week.
    CREATE TABLE IF NOT EXISTS report_events(
        app TEXT NOT NULL,
        event_key TEXT NOT NULL,
        received_hour TEXT NOT NULL,
        PRIMARY KEY(app, event_key)
    ) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS report_events_by_hour ON report_events(received_hour);
    -- One row per distinct device per (patch, event, reason); reason '' is the event at all.
    -- patch 0: a syncFailed that names no patch.
    CREATE TABLE IF NOT EXISTS report_devices(
        app TEXT NOT NULL,
        app_version TEXT NOT NULL,
        channel TEXT NOT NULL,
        patch INTEGER NOT NULL,
        event TEXT NOT NULL,
        reason TEXT NOT NULL,
        device TEXT NOT NULL,
        PRIMARY KEY(app, app_version, channel, patch, event, reason, device)
    ) WITHOUT ROWID;
    -- The row count of report_devices per group, kept beside it so figures never scan devices.
    CREATE TABLE IF NOT EXISTS report_counts(
        app TEXT NOT NULL,
        app_version TEXT NOT NULL,
        channel TEXT NOT NULL,
        patch INTEGER NOT NULL,
        event TEXT NOT NULL,
        reason TEXT NOT NULL,
        devices INTEGER NOT NULL,
        PRIMARY KEY(app, app_version, channel, patch, event, reason)
    ) WITHOUT ROWID;
    -- Events per type per hour of the server's receive time (device clocks lie).
    CREATE TABLE IF NOT EXISTS report_hourly(
        app TEXT NOT NULL,
        app_version TEXT NOT NULL,
        channel TEXT NOT NULL,
        patch INTEGER NOT NULL,
        hour TEXT NOT NULL,
        event TEXT NOT NULL,
        events INTEGER NOT NULL,
        PRIMARY KEY(app, app_version, channel, patch, hour, event)
    ) WITHOUT ROWID;
    -- Issue 20; additive. What a report must cost before it counts (ReportRules): devices
    -- admitted to report, one row each per app (aged out after 30 days without a report);
    -- the hourly budgets they and their events use, per app ('*'), network and block (kept
    -- two hours); and the distinct blocks each patch's events came from (a guard's quorum).
    CREATE TABLE IF NOT EXISTS report_senders(
        app TEXT NOT NULL,
        device TEXT NOT NULL,
        last_hour TEXT NOT NULL,
        PRIMARY KEY(app, device)
    ) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS report_senders_by_hour ON report_senders(last_hour);
    CREATE TABLE IF NOT EXISTS report_budget(
        app TEXT NOT NULL,
        kind TEXT NOT NULL,
        scope TEXT NOT NULL,
        hour TEXT NOT NULL,
        used INTEGER NOT NULL,
        PRIMARY KEY(app, kind, scope, hour)
    ) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS report_budget_by_hour ON report_budget(hour);
    CREATE TABLE IF NOT EXISTS report_blocks(
        app TEXT NOT NULL,
        app_version TEXT NOT NULL,
        channel TEXT NOT NULL,
        patch INTEGER NOT NULL,
        event TEXT NOT NULL,
        block TEXT NOT NULL,
        PRIMARY KEY(app, app_version, channel, patch, event, block)
    ) WITHOUT ROWID;
    -- Secrets the service makes for itself (the report receipt key), never printed.
    CREATE TABLE IF NOT EXISTS registry_secrets(
        name TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    -- Guards (`patchctl apps guard`): halt or revoke a patch whose rollback rate is too high.
    CREATE TABLE IF NOT EXISTS patch_guards(
        app TEXT NOT NULL REFERENCES apps(name),
        channel TEXT NOT NULL,
        max_rollback_ppm INTEGER NOT NULL CHECK(max_rollback_ppm BETWEEN 1 AND 1000000),
        min_devices INTEGER NOT NULL CHECK(min_devices >= 1),
        action TEXT NOT NULL CHECK(action IN ('halt', 'revoke')),
        set_at TEXT NOT NULL,
        set_by TEXT NOT NULL,
        PRIMARY KEY(app, channel)
    );
    -- A patch a guard acted on: it is not acted on again (a patch resumed by hand stays resumed).
    CREATE TABLE IF NOT EXISTS guard_trips(
        app TEXT NOT NULL,
        app_version TEXT NOT NULL,
        number INTEGER NOT NULL,
        channel TEXT NOT NULL,
        action TEXT NOT NULL,
        at TEXT NOT NULL,
        installed INTEGER NOT NULL,
        rolled_back INTEGER NOT NULL,
        lower_ppm INTEGER NOT NULL,
        threshold_ppm INTEGER NOT NULL,
        PRIMARY KEY(app, app_version, number),
        FOREIGN KEY(app, app_version, number) REFERENCES patches(app, app_version, number)
    );
    -- What a guard was configured to do when a trip did something else (issue 20: a revoke that
    -- would leave the version with no patch halts instead); additive: a trip without a row here
    -- did what its guard said (guard_trips.action is always what was done).
    CREATE TABLE IF NOT EXISTS guard_trip_overrides(
        app TEXT NOT NULL,
        app_version TEXT NOT NULL,
        number INTEGER NOT NULL,
        configured TEXT NOT NULL,
        reason TEXT NOT NULL,
        PRIMARY KEY(app, app_version, number),
        FOREIGN KEY(app, app_version, number) REFERENCES guard_trips(app, app_version, number)
    );
    -- Staged rollouts (`publish --advance 25,50,100 --every 1h`): the steps still to take and
    -- when the next one is due. Advanced by patchd's upkeep only on its guard's evidence.
    CREATE TABLE IF NOT EXISTS rollout_schedules(
        app TEXT NOT NULL,
        app_version TEXT NOT NULL,
        number INTEGER NOT NULL,
        steps TEXT NOT NULL,
        every_seconds INTEGER NOT NULL CHECK(every_seconds >= 60),
        next_at TEXT NOT NULL,
        PRIMARY KEY(app, app_version, number),
        FOREIGN KEY(app, app_version, number) REFERENCES patches(app, app_version, number)
    );
    -- Signed delivery conditions (DeliveryConditions: salted device hashes, OS range) as
    -- canonical JSON; additive: a patch without a row here has none.
    CREATE TABLE IF NOT EXISTS patch_conditions(
        app TEXT NOT NULL,
        app_version TEXT NOT NULL,
        number INTEGER NOT NULL,
        conditions TEXT NOT NULL,
        PRIMARY KEY(app, app_version, number),
        FOREIGN KEY(app, app_version, number) REFERENCES patches(app, app_version, number)
    );
    -- Push (issue 15); additive. APNs device tokens PatchClient registers (unauthenticated,
    -- so capped per app), deduplicated per app and refreshed on each registration.
    CREATE TABLE IF NOT EXISTS push_devices(
        app TEXT NOT NULL REFERENCES apps(name),
        token TEXT NOT NULL,
        environment TEXT NOT NULL CHECK(environment IN ('production', 'sandbox')),
        app_version TEXT NOT NULL,
        channel TEXT NOT NULL,
        registered_at TEXT NOT NULL,
        PRIMARY KEY(app, token)
    );
    CREATE INDEX IF NOT EXISTS push_devices_by_version ON push_devices(app, app_version, channel);
    -- registered_at is the last refresh (a device registers on every launch): push rounds go
    -- freshest first, a full table evicts its stalest token, and expired ones are pruned.
    CREATE INDEX IF NOT EXISTS push_devices_by_refresh ON push_devices(app, registered_at);
    -- Issue 20; additive. The device a token was first registered by, as 128 bits of the
    -- SHA-256 of its X-Device-ID: only it may re-point the token. A token without a row (one
    -- stored before this table) is bound by its next registration.
    CREATE TABLE IF NOT EXISTS push_device_owners(
        app TEXT NOT NULL,
        token TEXT NOT NULL,
        device TEXT NOT NULL,
        PRIMARY KEY(app, token)
    );
    -- How many tokens each app holds, kept with every insert and delete so that a new
    -- token learns whether the table is full without counting a million rows; an app
    -- without a row is counted once, by its next new token.
    CREATE TABLE IF NOT EXISTS push_device_counts(
        app TEXT PRIMARY KEY,
        stored INTEGER NOT NULL
    );
    -- The app's APNs provider identity (`patchctl apps apns`); its .p8 key is a file in the
    -- key directory, named by key id, never a column.
    CREATE TABLE IF NOT EXISTS apns_config(
        app TEXT PRIMARY KEY REFERENCES apps(name),
        team_id TEXT NOT NULL,
        key_id TEXT NOT NULL,
        topic TEXT NOT NULL,
        set_at TEXT NOT NULL,
        set_by TEXT NOT NULL
    );
    -- Delegated targets roles (`patchctl keys delegate`, issue 24); additive. A role signs one
    -- channel's targets with its own keys (`keys_json`: canonical JSON {keyid: TUF key});
    -- top-level targets lists it under `delegations`, snapshot lists NAME.json.
    CREATE TABLE IF NOT EXISTS delegations(
        app TEXT NOT NULL REFERENCES apps(name),
        name TEXT NOT NULL,
        channel TEXT NOT NULL,
        keys_json TEXT NOT NULL,
        threshold INTEGER NOT NULL CHECK(threshold >= 1),
        created_at TEXT NOT NULL,
        created_by TEXT NOT NULL,
        PRIMARY KEY(app, name),
        UNIQUE(app, channel)
    );
    -- Each signed version of a delegated role's metadata, served as {version}.{role}.json.
    CREATE TABLE IF NOT EXISTS delegated_metadata(
        app TEXT NOT NULL,
        role TEXT NOT NULL,
        version INTEGER NOT NULL,
        bytes BLOB NOT NULL,
        expires TEXT NOT NULL,
        PRIMARY KEY(app, role, version),
        FOREIGN KEY(app, role) REFERENCES delegations(app, name)
    );
    -- The channels each app has declared (issue 42): every operation that names a channel refuses
    -- one not here, so a mistyped `--channel stagign` is an error, not a new channel. `production`
    -- is declared with the app; others by `channels create` or `publish --new-channel`. A
    -- registry from before this table gains it on open with `production` and every channel it
    -- already used (`Schema.declareChannelsInUse`). Channels are never removed: patches, guards
    -- and reports keep naming them.
    CREATE TABLE IF NOT EXISTS channels(
        app TEXT NOT NULL REFERENCES apps(name),
        name TEXT NOT NULL,
        created_at TEXT NOT NULL,
        created_by TEXT NOT NULL,
        PRIMARY KEY(app, name)
    );
    -- The app versions devices check for (issue 44): patchd counts them in memory on the check
    -- path and adds its counts here once a minute (several instances add theirs), one row per
    -- app, UTC day (YYYY-MM-DD) and version as devices sent it. Rows older than 30 days are
    -- pruned, and at most `Registry.maxAskedVersionsPerDay` versions of an app are kept per
    -- day (the least asked go first), so versions made up by devices cannot fill the disk.
    CREATE TABLE IF NOT EXISTS version_checks(
        app TEXT NOT NULL REFERENCES apps(name),
        day TEXT NOT NULL,
        app_version TEXT NOT NULL,
        checks INTEGER NOT NULL CHECK(checks >= 1),
        PRIMARY KEY(app, day, app_version)
    ) WITHOUT ROWID;
    -- Patches made by one publish to several app versions (`publish --app-version '2.3.*'`),
    -- each with the audit seq of the one `patch.publish` event that lists them all: how
    -- `status` shows them together. A publish to one version adds no row.
    CREATE TABLE IF NOT EXISTS patch_sets(
        app TEXT NOT NULL,
        app_version TEXT NOT NULL,
        number INTEGER NOT NULL,
        publish_seq INTEGER NOT NULL,
        PRIMARY KEY(app, app_version, number),
        FOREIGN KEY(app, app_version, number) REFERENCES patches(app, app_version, number)
    ) WITHOUT ROWID;
    -- The withhold role's entries (issue 44; additive): the targets withhold.json lists, one
    -- row each, by target path and the sha256 signed for it. The role itself is the
    -- delegations row named 'withhold' with channel '' (no channel is empty), its signed files
    -- delegated_metadata's rows of that role, so snapshot lists and patchd serves them as any
    -- delegated role's.
    CREATE TABLE IF NOT EXISTS withheld_targets(
        app TEXT NOT NULL REFERENCES apps(name),
        path TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        app_version TEXT NOT NULL,
        channel TEXT NOT NULL,
        number INTEGER NOT NULL,
        roll_back INTEGER NOT NULL,
        reason TEXT NOT NULL,
        at TEXT NOT NULL,
        actor TEXT NOT NULL,
        PRIMARY KEY(app, path)
    );
    -- The native manifest of an app version (issue 45): the classes and selectors its binary
    -- has, as `patchctl apps manifest` stored it (the bytes as given, and their sha256), for the
    -- script check of every publish to the version. A new upload replaces it (audited).
    CREATE TABLE IF NOT EXISTS native_manifests(
        app TEXT NOT NULL REFERENCES apps(name),
        app_version TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        manifest BLOB NOT NULL,
        uploaded_at TEXT NOT NULL,
        uploaded_by TEXT NOT NULL,
        PRIMARY KEY(app, app_version)
    ) WITHOUT ROWID;
    -- The script check of each patch (issue 45), written with the patch: the outcome (passed,
    -- warnings, failed, unchecked), whether the native manifest was there, the report (canonical
    -- JSON of its findings) and, when --skip-check published past it, the reason given.
    CREATE TABLE IF NOT EXISTS patch_checks(
        app TEXT NOT NULL,
        app_version TEXT NOT NULL,
        number INTEGER NOT NULL,
        outcome TEXT NOT NULL,
        native TEXT NOT NULL,
        manifest_sha256 TEXT,
        report TEXT NOT NULL,
        skip_reason TEXT,
        checked_at TEXT NOT NULL,
        PRIMARY KEY(app, app_version, number),
        FOREIGN KEY(app, app_version, number) REFERENCES patches(app, app_version, number)
    ) WITHOUT ROWID;
    -- Release changes waiting for signatures (the two-person rule, issue 24); additive. `change`
    -- is the operation's arguments (canonical JSON; a publish's bundle in `bundle`), `signed`
    -- the canonical JSON of the role's next metadata that every signature is over,
    -- `signatures` [{keyid, sig}] gathered so far. Nothing here is served.
    CREATE TABLE IF NOT EXISTS pending_changes(
        app TEXT NOT NULL REFERENCES apps(name),
        id INTEGER NOT NULL,
        role TEXT NOT NULL,
        change TEXT NOT NULL,
        bundle BLOB,
        captured BLOB,
        signed BLOB NOT NULL,
        keyids TEXT NOT NULL,
        threshold INTEGER NOT NULL,
        signatures TEXT NOT NULL,
        proposed_at TEXT NOT NULL,
        proposed_by TEXT NOT NULL,
        state TEXT NOT NULL,
        PRIMARY KEY(app, id)
    );
    -- Webhooks (issue 47; Webhooks/Registry+Webhooks.swift). `webhooks`: one subscription per
    -- row, kept after removal (`removed_at`) so its delivered / failed / dropped counts stay in
    -- `/metrics`; `events` is ",type,family.*," or "*"; `secret` never leaves the registry but
    -- in a signature. `webhook_outbox`: the events still to deliver, written in the transaction
    -- of the change they report; `n` orders them per subscription; times are Unix
    -- milliseconds. `webhook_marks`: events that are sent once per state (a schedule's hold on
    -- one step, a role's expiry warning, an app's health turning degraded).
    CREATE TABLE IF NOT EXISTS webhooks(
        id TEXT PRIMARY KEY,
        app TEXT NOT NULL REFERENCES apps(name),
        url TEXT NOT NULL,
        events TEXT NOT NULL,
        secret TEXT NOT NULL,
        insecure_http INTEGER NOT NULL,
        max_pending INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        created_by TEXT NOT NULL,
        removed_at TEXT,
        delivered INTEGER NOT NULL,
        failed INTEGER NOT NULL,
        dropped INTEGER NOT NULL,
        last_delivery_at TEXT,
        last_error TEXT,
        last_error_at TEXT
    );
    CREATE TABLE IF NOT EXISTS webhook_outbox(
        sub TEXT NOT NULL,
        n INTEGER NOT NULL,
        event_id TEXT NOT NULL,
        type TEXT NOT NULL,
        app TEXT NOT NULL,
        body BLOB NOT NULL,
        created_ms INTEGER NOT NULL,
        attempts INTEGER NOT NULL,
        next_ms INTEGER NOT NULL,
        claimed_until_ms INTEGER NOT NULL,
        last_error TEXT,
        PRIMARY KEY(sub, n)
    );
    CREATE TABLE IF NOT EXISTS webhook_marks(
        app TEXT NOT NULL,
        mark TEXT NOT NULL,
        PRIMARY KEY(app, mark)
    );

    """

    static let sqliteOnly = """
    CREATE TRIGGER IF NOT EXISTS audit_append_only_update BEFORE UPDATE ON audit
        BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
    CREATE TRIGGER IF NOT EXISTS audit_append_only_delete BEFORE DELETE ON audit
        BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
    """

    /// `registry_changes`: one row whose version every write transaction bumps before it
    /// commits (PostgresStore), what `dataVersion` reads where SQLite has PRAGMA data_version.
    /// `registry_identity`: names this registry in the markers it leaves in a key directory.
    /// `schema_script`: the SHA-256 of the script that last ran, so an open skips it when it is
    /// the same (`Registry.init`).
    /// `upkeep_lease`: which instance runs the background passes, until when (the server's
    /// clock), and how many apps it cannot re-sign (`PostgresStore.renewUpkeepLease`).
    static let postgresOnly = """
    CREATE TABLE IF NOT EXISTS schema_script(sha256 TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS upkeep_lease(
        id INTEGER PRIMARY KEY CHECK(id = 1),
        holder TEXT NOT NULL,
        expires_at TIMESTAMPTZ NOT NULL,
        missing_keys BIGINT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS registry_changes(version BIGINT NOT NULL);
    INSERT INTO registry_changes(version) SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM registry_changes);
    CREATE TABLE IF NOT EXISTS registry_identity(id TEXT NOT NULL);
    INSERT INTO registry_identity(id) SELECT md5(random()::text || clock_timestamp()::text) WHERE NOT EXISTS (SELECT 1 FROM registry_identity);
    CREATE OR REPLACE FUNCTION audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'the audit log is append-only'; END $$;
    -- Each trigger on its own, as SQLite's IF NOT EXISTS does: with one check for both, a
    -- registry whose row trigger was dropped (tampering) failed to open at all (42710 on the
    -- truncate trigger), so `audit --verify` could not report the edit.
    DO $$ BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'audit_append_only' AND tgrelid = 'audit'::regclass) THEN
            CREATE TRIGGER audit_append_only BEFORE UPDATE OR DELETE ON audit FOR EACH ROW EXECUTE FUNCTION audit_append_only();
        END IF;
        IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'audit_append_only_truncate' AND tgrelid = 'audit'::regclass) THEN
            CREATE TRIGGER audit_append_only_truncate BEFORE TRUNCATE ON audit FOR EACH STATEMENT EXECUTE FUNCTION audit_append_only();
        END IF;
    END $$;
    """
}
