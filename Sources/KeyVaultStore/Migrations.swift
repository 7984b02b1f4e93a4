import GRDB

extension KeyVaultDatabase {
    /// The schema, as migrations. Append-only: never edit a registered migration; add a new one.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        // Append-only: never edit a registered migration; add a new one.
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE accounts (
                    id TEXT PRIMARY KEY NOT NULL,
                    created INTEGER NOT NULL,
                    head TEXT NOT NULL,
                    sequence INTEGER NOT NULL
                ) STRICT;
                CREATE TABLE links (
                    account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    sequence INTEGER NOT NULL,
                    hash TEXT NOT NULL,
                    json BLOB NOT NULL,
                    PRIMARY KEY (account, sequence)
                ) STRICT, WITHOUT ROWID;
                CREATE TABLE devices (
                    id TEXT PRIMARY KEY NOT NULL,
                    account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    name TEXT NOT NULL,
                    signing_key BLOB NOT NULL,
                    box_key BLOB NOT NULL,
                    added INTEGER NOT NULL,
                    revoked INTEGER,
                    last_seen INTEGER
                ) STRICT;
                CREATE INDEX devices_account ON devices(account);
                CREATE TABLE recovery_slots (
                    account TEXT PRIMARY KEY NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    json BLOB NOT NULL
                ) STRICT;
                CREATE TABLE key_boxes (
                    account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    generation INTEGER NOT NULL,
                    recipient TEXT NOT NULL,
                    json BLOB NOT NULL,
                    PRIMARY KEY (account, generation, recipient)
                ) STRICT, WITHOUT ROWID;
                CREATE TABLE member_wraps (
                    account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    member TEXT NOT NULL,
                    member_generation INTEGER NOT NULL,
                    master_generation INTEGER NOT NULL,
                    envelope TEXT NOT NULL,
                    PRIMARY KEY (account, member, member_generation, master_generation)
                ) STRICT, WITHOUT ROWID;
                CREATE TABLE attachments (
                    account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    member TEXT NOT NULL,
                    address TEXT NOT NULL,
                    size INTEGER NOT NULL,
                    created INTEGER NOT NULL,
                    data BLOB NOT NULL,
                    PRIMARY KEY (account, member, address)
                ) STRICT, WITHOUT ROWID;
                CREATE TABLE audit (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    time INTEGER NOT NULL,
                    event TEXT NOT NULL,
                    device TEXT,
                    detail TEXT
                ) STRICT;
                CREATE INDEX audit_account ON audit(account, id);
                """)
        }
        migrator.registerMigration("v2 link requests") { db in
            try db.execute(sql: """
                CREATE TABLE link_requests (
                    account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    code TEXT NOT NULL,
                    status TEXT NOT NULL,
                    expires INTEGER NOT NULL,
                    request BLOB NOT NULL,
                    approver TEXT,
                    PRIMARY KEY (account, code)
                ) STRICT, WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("v3 attachment keys") { db in
            // The wrapped data key, apart from the content, so re-wrapping rewrites only it.
            try db.execute(sql: "ALTER TABLE attachments ADD COLUMN key BLOB NOT NULL DEFAULT x''")
        }
        migrator.registerMigration("v4 request nonces") { db in
            // Nonces of Ed25519-signed requests, kept while their timestamps are fresh, so
            // that a request captured before a restart is refused after it. No foreign key:
            // a deleted account's nonces still expire, and still refuse replays meanwhile.
            try db.execute(sql: """
                CREATE TABLE request_nonces (
                    device TEXT NOT NULL,
                    nonce TEXT NOT NULL,
                    time INTEGER NOT NULL,
                    PRIMARY KEY (device, nonce)
                ) STRICT, WITHOUT ROWID;
                CREATE INDEX request_nonces_time ON request_nonces(time);
                """)
        }
        migrator.registerMigration("v5 link exchange") { db in
            // Device link version 2 (docs/formats/device-link.md): the approver's and the new
            // device's random values, and the client address that asked, for per-address limits.
            // Version 1 requests cannot finish under version 2; they are dropped.
            try db.execute(sql: """
                DELETE FROM link_requests;
                ALTER TABLE link_requests ADD COLUMN approver_nonce TEXT;
                ALTER TABLE link_requests ADD COLUMN device_nonce TEXT;
                ALTER TABLE link_requests ADD COLUMN client TEXT NOT NULL DEFAULT '';
                CREATE INDEX link_requests_client ON link_requests(client, status, expires);
                CREATE INDEX link_requests_expires ON link_requests(status, expires);
                """)
        }
        migrator.registerMigration("v6 recovery state") { db in
            // What recovery enrollment must remember across replicas and restarts: challenges
            // and tokens used once (until they expire), and failed proofs per account and
            // per client address (for the rate limit), both dropped once past.
            try db.execute(sql: """
                CREATE TABLE used_once (
                    kind TEXT NOT NULL,
                    value TEXT NOT NULL,
                    expires INTEGER NOT NULL,
                    PRIMARY KEY (kind, value)
                ) STRICT, WITHOUT ROWID;
                CREATE INDEX used_once_expires ON used_once(expires);
                CREATE TABLE failures (
                    key TEXT NOT NULL,
                    time INTEGER NOT NULL
                ) STRICT;
                CREATE INDEX failures_key ON failures(key, time);
                CREATE INDEX failures_time ON failures(time);
                """)
        }
        migrator.registerMigration("v7 sharing relay") { db in
            // The sharing relay (docs/formats/member-sharing.md): an account's identity wrapped
            // under each master generation; the member keys a sharer sealed to its grantees
            // (no foreign key on the grantee: deleting it deletes them explicitly); the
            // contact exchange between two accounts, kept as its JSON.
            try db.execute(sql: """
                CREATE TABLE identity_wraps (
                    account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    identity_generation INTEGER NOT NULL,
                    master_generation INTEGER NOT NULL,
                    envelope TEXT NOT NULL,
                    PRIMARY KEY (account, identity_generation, master_generation)
                ) STRICT, WITHOUT ROWID;
                CREATE TABLE share_boxes (
                    account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    grantee TEXT NOT NULL,
                    member TEXT NOT NULL,
                    member_generation INTEGER NOT NULL,
                    grant_seq INTEGER NOT NULL,
                    box BLOB NOT NULL,
                    PRIMARY KEY (account, grantee, member, member_generation, grant_seq)
                ) STRICT, WITHOUT ROWID;
                CREATE INDEX share_boxes_grantee ON share_boxes(grantee);
                CREATE TABLE contact_requests (
                    id TEXT PRIMARY KEY NOT NULL,
                    from_account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    to_account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    expires INTEGER NOT NULL,
                    info BLOB NOT NULL
                ) STRICT;
                CREATE INDEX contact_requests_from ON contact_requests(from_account, expires);
                CREATE INDEX contact_requests_to ON contact_requests(to_account, expires);
                CREATE INDEX contact_requests_expires ON contact_requests(expires);
                """)
        }
        migrator.registerMigration("v8 head statements") { db in
            // The newest head statement of each device (docs/formats/head-statement.md), as its JSON.
            try db.execute(sql: """
                CREATE TABLE head_statements (
                    account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    device TEXT NOT NULL,
                    time INTEGER NOT NULL,
                    statement BLOB NOT NULL,
                    PRIMARY KEY (account, device)
                ) STRICT, WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("v9 audit sequence") { db in
            // A link's sequence as a number (it was the detail "sequence N").
            try db.execute(sql: """
                ALTER TABLE audit ADD COLUMN sequence INTEGER;
                UPDATE audit SET sequence = CAST(substr(detail, 10) AS INTEGER), detail = NULL
                    WHERE event LIKE 'link.%' AND detail GLOB 'sequence [0-9]*' AND substr(detail, 10) NOT GLOB '*[^0-9]*';
                UPDATE audit SET sequence = 0 WHERE event = 'link.genesis';
                """)
        }
        migrator.registerMigration("v10 attachments in chunks") { db in
            // An upload's chunks live under its id until the attachment (which names the
            // upload) or the account goes; an unfinished upload is dropped after a day.
            try db.execute(sql: """
                ALTER TABLE attachments ADD COLUMN upload TEXT;
                CREATE TABLE attachment_uploads (
                    upload TEXT PRIMARY KEY,
                    account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    member TEXT NOT NULL,
                    address TEXT NOT NULL,
                    key BLOB NOT NULL,
                    chunk_shift INTEGER NOT NULL,
                    size INTEGER NOT NULL,
                    chunks INTEGER NOT NULL,
                    created INTEGER NOT NULL,
                    complete INTEGER NOT NULL DEFAULT 0
                ) STRICT;
                CREATE INDEX attachment_uploads_by_account ON attachment_uploads (account, complete, created);
                CREATE TABLE attachment_chunks (
                    upload TEXT NOT NULL REFERENCES attachment_uploads(upload) ON DELETE CASCADE,
                    idx INTEGER NOT NULL,
                    data BLOB NOT NULL,
                    PRIMARY KEY (upload, idx)
                ) STRICT;
                """)
        }
        migrator.registerMigration("v11 attachment names") { db in
            // A device's sealed name and details of the attachment (docs/formats/attachment-meta.md).
            try db.execute(sql: "ALTER TABLE attachments ADD COLUMN meta BLOB")
        }
        migrator.registerMigration("v12 deleted accounts") { db in
            // The head a deleted account had and the device that deleted it: only that device,
            // with a chain that extends the head, founds the account here again.
            try db.execute(sql: "CREATE TABLE deleted_accounts (id TEXT PRIMARY KEY, sequence INTEGER NOT NULL, head TEXT NOT NULL, device TEXT, deleted INTEGER NOT NULL)")
        }
        migrator.registerMigration("v13 upload starters") { db in
            // The account whose device began an upload: the account itself, or a grantee
            // uploading through the relay. An upload is its starter's alone.
            try db.execute(sql: "ALTER TABLE attachment_uploads ADD COLUMN started_by TEXT NOT NULL DEFAULT ''")
            try db.execute(sql: "UPDATE attachment_uploads SET started_by = account")
        }
        migrator.registerMigration("v14 unfinished uploads by starter") { db in
            // A deleted account's uploads in flight in other accounts go with it.
            // Idempotent: a database of a build of the same day may have it from its v13.
            try db.execute(sql: "CREATE INDEX IF NOT EXISTS attachment_uploads_unfinished_by_starter ON attachment_uploads (started_by) WHERE complete = 0")
        }
        migrator.registerMigration("v15 attachments with rowids") { db in
            // The content out of the key's B-tree, and last: WITHOUT ROWID made the whole
            // row the key's cell, so that every comparison on the way down to a row read
            // all of its content's overflow pages, and a column after the content (key,
            // upload, meta) was read by walking them. (account, member, address) stays
            // the primary key, now an index beside the rows.
            try db.execute(sql: """
                CREATE TABLE attachments_v15 (
                    account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    member TEXT NOT NULL,
                    address TEXT NOT NULL,
                    size INTEGER NOT NULL,
                    created INTEGER NOT NULL,
                    key BLOB NOT NULL DEFAULT x'',
                    upload TEXT,
                    meta BLOB,
                    data BLOB NOT NULL,
                    PRIMARY KEY (account, member, address)
                ) STRICT;
                INSERT INTO attachments_v15 (account, member, address, size, created, key, upload, meta, data)
                    SELECT account, member, address, size, created, key, upload, meta, data FROM attachments;
                DROP TABLE attachments;
                ALTER TABLE attachments_v15 RENAME TO attachments;
                """)
        }
        return migrator
    }
}
