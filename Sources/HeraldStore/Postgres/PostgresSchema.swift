import Foundation

/// The PostgreSQL schema, as versioned migrations. Batches are applied by server-side functions so
/// that a batch of any size is one round trip: the policy is decided in Swift, and the functions only
/// apply its plan against the shared rows, under row locks.
enum PostgresSchema {
    /// The oldest schema a worker must know (its `migrations.count`) to run on a database this
    /// Herald migrated; `herald_schema_version.compatible_from` keeps it for older workers to read
    /// (``PostgresStore/migrate()``).
    ///
    /// A migration an older worker would run on wrongly leaves this at the new count: server-side
    /// functions it calls by a signature the migration replaced, rows kept where it does not look,
    /// keys it writes differently. One that only adds what older workers can pass over (an index,
    /// a table they never use) may leave it where it was, and workers can then be upgraded one by
    /// one. Every migration up to 10 is of the first kind (10 changed how events without a time are
    /// keyed); 11 is of the second (the same function, ranking ties in another order).
    static let compatibleFrom = 10

    /// Applied in order; `herald_schema_version` records how far a database is. Never edit a
    /// released migration: add one, and say in ``compatibleFrom`` whether older workers may run
    /// on it.
    static let migrations: [String] = [
        """
        CREATE TABLE devices (
            user_id text NOT NULL, device_id text NOT NULL, platform text NOT NULL, provider text NOT NULL,
            token text NOT NULL, app_id text NOT NULL, sandbox boolean NOT NULL, locale text,
            registered_at bigint NOT NULL, PRIMARY KEY (user_id, device_id));
        CREATE UNIQUE INDEX devices_by_token ON devices (provider, token);
        CREATE TABLE invalid_tokens (
            provider text NOT NULL, token text NOT NULL, invalidated_at bigint NOT NULL, PRIMARY KEY (provider, token));
        CREATE TABLE profiles (user_id text PRIMARY KEY, locale text, time_zone text, updated_at bigint NOT NULL);
        CREATE TABLE preferences (user_id text PRIMARY KEY, document text NOT NULL, updated_at bigint NOT NULL);

        -- One directory change; the same rules as SQLiteStore.apply: changes apply by their time.
        -- enable_seqscan off: every statement inside is a lookup by key, and a plan cached while a
        -- table was small (a new database) must not keep scanning it once it is large.
        CREATE FUNCTION herald_apply(batch jsonb) RETURNS void LANGUAGE plpgsql SET enable_seqscan = off AS $$
        DECLARE
            e record;
        BEGIN
            FOR e IN SELECT * FROM jsonb_to_recordset(batch) AS x(
                t text, u text, d text, pl text, pv text, tk text, a text, sb boolean, l text, tz text, doc text, at bigint)
            LOOP
                IF e.t = 'registered' THEN
                    -- A newer registration of the same token elsewhere wins over this one.
                    CONTINUE WHEN EXISTS (SELECT 1 FROM devices v WHERE v.provider = e.pv AND v.token = e.tk
                        AND v.registered_at > e.at AND NOT (v.user_id = e.u AND v.device_id = e.d));
                    -- The token moves: it leaves whatever user or device had it before.
                    DELETE FROM devices v WHERE v.provider = e.pv AND v.token = e.tk AND NOT (v.user_id = e.u AND v.device_id = e.d);
                    INSERT INTO devices AS v (user_id, device_id, platform, provider, token, app_id, sandbox, locale, registered_at)
                    VALUES (e.u, e.d, e.pl, e.pv, e.tk, e.a, e.sb, e.l, e.at)
                    ON CONFLICT (user_id, device_id) DO UPDATE SET platform = excluded.platform, provider = excluded.provider,
                        token = excluded.token, app_id = excluded.app_id, sandbox = excluded.sandbox, locale = excluded.locale,
                        registered_at = excluded.registered_at
                    WHERE excluded.registered_at >= v.registered_at;
                ELSIF e.t = 'unregistered' THEN
                    DELETE FROM devices v WHERE v.user_id = e.u AND v.device_id = e.d AND v.registered_at <= e.at;
                ELSIF e.t = 'invalidated' THEN
                    INSERT INTO invalid_tokens AS i (provider, token, invalidated_at) VALUES (e.pv, e.tk, e.at)
                    ON CONFLICT (provider, token) DO UPDATE SET invalidated_at = greatest(i.invalidated_at, excluded.invalidated_at);
                ELSIF e.t = 'profile' THEN
                    INSERT INTO profiles AS p (user_id, locale, time_zone, updated_at) VALUES (e.u, e.l, e.tz, e.at)
                    ON CONFLICT (user_id) DO UPDATE SET locale = coalesce(excluded.locale, p.locale),
                        time_zone = coalesce(excluded.time_zone, p.time_zone), updated_at = excluded.updated_at
                    WHERE excluded.updated_at >= p.updated_at;
                ELSIF e.t = 'preferences' THEN
                    INSERT INTO preferences AS p (user_id, document, updated_at) VALUES (e.u, e.doc, e.at)
                    ON CONFLICT (user_id) DO UPDATE SET document = excluded.document, updated_at = excluded.updated_at
                    WHERE excluded.updated_at >= p.updated_at;
                ELSE
                    RAISE EXCEPTION 'herald_apply: unknown change type %', e.t;
                END IF;
            END LOOP;
        END $$;
        """,
        """
        CREATE TABLE decisions (
            event_id text NOT NULL, kind text NOT NULL, recipient text NOT NULL, reason text NOT NULL, due_at bigint,
            decided_at bigint NOT NULL, PRIMARY KEY (event_id, kind, recipient));
        CREATE INDEX decisions_by_time ON decisions (decided_at);
        CREATE TABLE throttle_windows (
            recipient text NOT NULL, rule text NOT NULL, window_start bigint NOT NULL, window_end bigint NOT NULL,
            count integer NOT NULL, PRIMARY KEY (recipient, rule, window_start));
        CREATE TABLE due_work (
            id bigserial PRIMARY KEY, type text NOT NULL, due_at bigint NOT NULL, recipient text NOT NULL,
            event_id text, kind text, rule text, window_start bigint, payload text, claimed_until bigint);
        CREATE UNIQUE INDEX due_deferred ON due_work (event_id, kind, recipient) WHERE type = 'deferred';
        CREATE UNIQUE INDEX due_digest ON due_work (recipient, rule, window_start) WHERE type = 'digest';
        CREATE INDEX due_by_time ON due_work (due_at);
        CREATE TABLE digest_items (
            id bigserial PRIMARY KEY, recipient text NOT NULL, rule text NOT NULL, window_start bigint NOT NULL,
            event_id text NOT NULL, kind text NOT NULL, payload text NOT NULL, added_at bigint NOT NULL);
        CREATE INDEX digest_items_by_window ON digest_items (recipient, rule, window_start, id);

        -- Resolves a batch of decision plans (see DecisionPlan.resolved), in order. The ledger row is
        -- inserted first, so a concurrent decider of the same key waits for this one and then sees
        -- it; each throttle window is locked before it is read, so concurrent deciders count one at
        -- a time and never admit more than the limit.
        CREATE FUNCTION herald_decide(batch jsonb)
        RETURNS TABLE (o_index integer, o_reason text, o_due bigint, o_redelivered boolean)
        LANGUAGE plpgsql SET enable_seqscan = off AS $$
        DECLARE
            r record;
            l record;
            prior record;
            held integer;
            v_reason text;
            v_due bigint;
            v_effect text;
            v_rule text;
            v_window bigint;
        BEGIN
            FOR r IN SELECT * FROM jsonb_to_recordset(batch) AS x(
                i integer, e text, k text, r text, at bigint, p text, res boolean, reason text, due bigint, fx text,
                limits jsonb)
            LOOP
                INSERT INTO decisions (event_id, kind, recipient, reason, due_at, decided_at)
                VALUES (r.e, r.k, r.r, 'pending', NULL, r.at) ON CONFLICT DO NOTHING;
                IF NOT FOUND THEN
                    SELECT d.reason, d.due_at INTO prior FROM decisions d
                    WHERE d.event_id = r.e AND d.kind = r.k AND d.recipient = r.r FOR UPDATE;
                    IF NOT (r.res AND prior.reason LIKE 'deferred.%') THEN
                        o_index := r.i; o_reason := prior.reason; o_due := prior.due_at; o_redelivered := true;
                        RETURN NEXT;
                        CONTINUE;
                    END IF;
                END IF;
                v_reason := r.reason; v_due := r.due; v_effect := r.fx; v_rule := NULL; v_window := NULL;
                IF r.reason = 'sent' AND jsonb_array_length(r.limits) > 0 THEN
                    FOR l IN SELECT * FROM jsonb_to_recordset(r.limits) AS y(
                        rule text, ws bigint, we bigint, n integer, reason text, due bigint, fx text)
                    LOOP
                        INSERT INTO throttle_windows (recipient, rule, window_start, window_end, count)
                        VALUES (r.r, l.rule, l.ws, l.we, 0) ON CONFLICT DO NOTHING;
                        SELECT w.count INTO held FROM throttle_windows w
                        WHERE w.recipient = r.r AND w.rule = l.rule AND w.window_start = l.ws FOR UPDATE;
                        IF held >= l.n THEN
                            v_reason := l.reason; v_due := l.due; v_effect := l.fx; v_rule := l.rule; v_window := l.ws;
                            EXIT;
                        END IF;
                    END LOOP;
                    IF v_reason = 'sent' THEN
                        -- Row by row, by key: a join here gets a generic plan that scans the table.
                        FOR l IN SELECT * FROM jsonb_to_recordset(r.limits) AS y(rule text, ws bigint) LOOP
                            UPDATE throttle_windows w SET count = w.count + 1
                            WHERE w.recipient = r.r AND w.rule = l.rule AND w.window_start = l.ws;
                        END LOOP;
                    END IF;
                END IF;
                IF v_effect = 'digest' THEN
                    INSERT INTO digest_items (recipient, rule, window_start, event_id, kind, payload, added_at)
                    VALUES (r.r, v_rule, v_window, r.e, r.k, r.p, r.at);
                    INSERT INTO due_work (type, due_at, recipient, rule, window_start)
                    VALUES ('digest', v_due, r.r, v_rule, v_window)
                    ON CONFLICT (recipient, rule, window_start) WHERE type = 'digest' DO NOTHING;
                ELSIF v_effect = 'schedule' THEN
                    INSERT INTO due_work AS w (type, due_at, recipient, event_id, kind, payload)
                    VALUES ('deferred', v_due, r.r, r.e, r.k, r.p)
                    ON CONFLICT (event_id, kind, recipient) WHERE type = 'deferred'
                    DO UPDATE SET due_at = excluded.due_at, payload = excluded.payload, claimed_until = NULL;
                END IF;
                UPDATE decisions d SET reason = v_reason, due_at = v_due, decided_at = r.at
                WHERE d.event_id = r.e AND d.kind = r.k AND d.recipient = r.r;
                o_index := r.i; o_reason := v_reason; o_due := v_due; o_redelivered := false;
                RETURN NEXT;
            END LOOP;
        END $$;
        """,
        // 3: the sender's delivery ledger and the Expo tickets that still owe a receipt.
        """
        CREATE TABLE deliveries (
            notification_id text PRIMARY KEY, provider text NOT NULL, delivered_at bigint NOT NULL);
        CREATE INDEX deliveries_by_time ON deliveries (delivered_at);
        CREATE TABLE pending_receipts (
            ticket_id text PRIMARY KEY, notification_id text NOT NULL, recipient text NOT NULL, token text NOT NULL,
            check_after bigint NOT NULL, claimed_until bigint);
        CREATE INDEX pending_receipts_by_time ON pending_receipts (check_after);
        """,
        // 4: purges find ended throttle windows by their end. Windows are written roughly in time
        // order, so a BRIN index serves, at a fraction of a B-tree's cost per write.
        """
        CREATE INDEX throttle_windows_by_end ON throttle_windows USING brin (window_end);
        """,
        // 5: the ledger and deferred work keyed by the event's own time first (see DecisionKey); 0
        // for an event without one. Rows decided before this have 0 too: until they are purged
        // (decisions_legacy_horizon), a new decision of an event with a time first looks for its key
        // at time 0, so a redelivery across the upgrade is still recognised.
        """
        CREATE TABLE decisions_legacy_horizon (decided_at bigint NOT NULL);
        INSERT INTO decisions_legacy_horizon SELECT max(decided_at) FROM decisions HAVING count(*) > 0;
        ALTER TABLE decisions ADD COLUMN event_time bigint NOT NULL DEFAULT 0;
        ALTER TABLE decisions DROP CONSTRAINT decisions_pkey;
        ALTER TABLE decisions ADD PRIMARY KEY (event_time, event_id, kind, recipient);
        ALTER TABLE due_work ADD COLUMN event_time bigint NOT NULL DEFAULT 0;
        DROP INDEX due_deferred;
        CREATE UNIQUE INDEX due_deferred ON due_work (event_time, event_id, kind, recipient) WHERE type = 'deferred';
        CREATE OR REPLACE FUNCTION herald_decide(batch jsonb)
        RETURNS TABLE (o_index integer, o_reason text, o_due bigint, o_redelivered boolean)
        LANGUAGE plpgsql SET enable_seqscan = off AS $$
        DECLARE
            r record;
            l record;
            prior record;
            held integer;
            v_reason text;
            v_due bigint;
            v_effect text;
            v_rule text;
            v_window bigint;
            legacy boolean := EXISTS (SELECT 1 FROM decisions_legacy_horizon);
        BEGIN
            FOR r IN SELECT * FROM jsonb_to_recordset(batch) AS x(
                i integer, t bigint, e text, k text, r text, at bigint, p text, res boolean, reason text, due bigint,
                fx text, limits jsonb)
            LOOP
                -- Decided before the ledger was keyed by event time, this event's entry is at time 0.
                IF legacy AND r.t <> 0 AND NOT r.res THEN
                    SELECT d.reason, d.due_at INTO prior FROM decisions d
                    WHERE d.event_time = 0 AND d.event_id = r.e AND d.kind = r.k AND d.recipient = r.r;
                    IF FOUND THEN
                        o_index := r.i; o_reason := prior.reason; o_due := prior.due_at; o_redelivered := true;
                        RETURN NEXT;
                        CONTINUE;
                    END IF;
                END IF;
                INSERT INTO decisions (event_time, event_id, kind, recipient, reason, due_at, decided_at)
                VALUES (r.t, r.e, r.k, r.r, 'pending', NULL, r.at) ON CONFLICT DO NOTHING;
                IF NOT FOUND THEN
                    SELECT d.reason, d.due_at INTO prior FROM decisions d
                    WHERE d.event_time = r.t AND d.event_id = r.e AND d.kind = r.k AND d.recipient = r.r FOR UPDATE;
                    IF NOT (r.res AND prior.reason LIKE 'deferred.%') THEN
                        o_index := r.i; o_reason := prior.reason; o_due := prior.due_at; o_redelivered := true;
                        RETURN NEXT;
                        CONTINUE;
                    END IF;
                END IF;
                v_reason := r.reason; v_due := r.due; v_effect := r.fx; v_rule := NULL; v_window := NULL;
                IF r.reason = 'sent' AND jsonb_array_length(r.limits) > 0 THEN
                    FOR l IN SELECT * FROM jsonb_to_recordset(r.limits) AS y(
                        rule text, ws bigint, we bigint, n integer, reason text, due bigint, fx text)
                    LOOP
                        INSERT INTO throttle_windows (recipient, rule, window_start, window_end, count)
                        VALUES (r.r, l.rule, l.ws, l.we, 0) ON CONFLICT DO NOTHING;
                        SELECT w.count INTO held FROM throttle_windows w
                        WHERE w.recipient = r.r AND w.rule = l.rule AND w.window_start = l.ws FOR UPDATE;
                        IF held >= l.n THEN
                            v_reason := l.reason; v_due := l.due; v_effect := l.fx; v_rule := l.rule; v_window := l.ws;
                            EXIT;
                        END IF;
                    END LOOP;
                    IF v_reason = 'sent' THEN
                        -- Row by row, by key: a join here gets a generic plan that scans the table.
                        FOR l IN SELECT * FROM jsonb_to_recordset(r.limits) AS y(rule text, ws bigint) LOOP
                            UPDATE throttle_windows w SET count = w.count + 1
                            WHERE w.recipient = r.r AND w.rule = l.rule AND w.window_start = l.ws;
                        END LOOP;
                    END IF;
                END IF;
                IF v_effect = 'digest' THEN
                    INSERT INTO digest_items (recipient, rule, window_start, event_id, kind, payload, added_at)
                    VALUES (r.r, v_rule, v_window, r.e, r.k, r.p, r.at);
                    INSERT INTO due_work (type, due_at, recipient, rule, window_start)
                    VALUES ('digest', v_due, r.r, v_rule, v_window)
                    ON CONFLICT (recipient, rule, window_start) WHERE type = 'digest' DO NOTHING;
                ELSIF v_effect = 'schedule' THEN
                    INSERT INTO due_work AS w (type, due_at, recipient, event_time, event_id, kind, payload)
                    VALUES ('deferred', v_due, r.r, r.t, r.e, r.k, r.p)
                    ON CONFLICT (event_time, event_id, kind, recipient) WHERE type = 'deferred'
                    DO UPDATE SET due_at = excluded.due_at, payload = excluded.payload, claimed_until = NULL;
                END IF;
                UPDATE decisions d SET reason = v_reason, due_at = v_due, decided_at = r.at
                WHERE d.event_time = r.t AND d.event_id = r.e AND d.kind = r.k AND d.recipient = r.r;
                o_index := r.i; o_reason := v_reason; o_due := v_due; o_redelivered := false;
                RETURN NEXT;
            END LOOP;
        END $$;
        """,
        // 6: the same rules in fewer writes. The ledger row is inserted with the plan's likely
        // outcome and updated only when a limit changed it (before, every decision inserted a
        // 'pending' row and updated it: a second row version and index entries for each). A limit
        // is checked and counted in one upsert, and the counts of the limits before it are given
        // back when a later one is full (before: an insert, a locking read and an update each).
        // No JIT inside the functions: enable_seqscan = off prices the one table without an index
        // (decisions_legacy_horizon) above jit_above_cost, and PostgreSQL compiled the statement
        // with LLVM on every batch, about a tenth of the server's time for key look-ups.
        """
        ALTER FUNCTION herald_apply(jsonb) SET jit = off;
        CREATE OR REPLACE FUNCTION herald_decide(batch jsonb)
        RETURNS TABLE (o_index integer, o_reason text, o_due bigint, o_redelivered boolean)
        LANGUAGE plpgsql SET enable_seqscan = off SET jit = off AS $$
        DECLARE
            r record;
            l record;
            g record;
            prior record;
            held integer;
            counted integer;
            inserted boolean;
            v_reason text;
            v_due bigint;
            v_effect text;
            v_rule text;
            v_window bigint;
            legacy boolean := EXISTS (SELECT 1 FROM decisions_legacy_horizon);
        BEGIN
            FOR r IN SELECT * FROM jsonb_to_recordset(batch) AS x(
                i integer, t bigint, e text, k text, r text, at bigint, p text, res boolean, reason text, due bigint,
                fx text, limits jsonb)
            LOOP
                -- Decided before the ledger was keyed by event time, this event's entry is at time 0.
                IF legacy AND r.t <> 0 AND NOT r.res THEN
                    SELECT d.reason, d.due_at INTO prior FROM decisions d
                    WHERE d.event_time = 0 AND d.event_id = r.e AND d.kind = r.k AND d.recipient = r.r;
                    IF FOUND THEN
                        o_index := r.i; o_reason := prior.reason; o_due := prior.due_at; o_redelivered := true;
                        RETURN NEXT;
                        CONTINUE;
                    END IF;
                END IF;
                -- Inserted first, so that a concurrent decider of the same key waits for this
                -- transaction and then finds the final row.
                INSERT INTO decisions (event_time, event_id, kind, recipient, reason, due_at, decided_at)
                VALUES (r.t, r.e, r.k, r.r, r.reason, r.due, r.at) ON CONFLICT DO NOTHING;
                inserted := FOUND;
                IF NOT inserted THEN
                    SELECT d.reason, d.due_at INTO prior FROM decisions d
                    WHERE d.event_time = r.t AND d.event_id = r.e AND d.kind = r.k AND d.recipient = r.r FOR UPDATE;
                    IF NOT (r.res AND prior.reason LIKE 'deferred.%') THEN
                        o_index := r.i; o_reason := prior.reason; o_due := prior.due_at; o_redelivered := true;
                        RETURN NEXT;
                        CONTINUE;
                    END IF;
                END IF;
                v_reason := r.reason; v_due := r.due; v_effect := r.fx; v_rule := NULL; v_window := NULL;
                IF r.reason = 'sent' AND jsonb_array_length(r.limits) > 0 THEN
                    counted := 0;
                    FOR l IN SELECT * FROM jsonb_to_recordset(r.limits) AS y(
                        rule text, ws bigint, we bigint, n integer, reason text, due bigint, fx text)
                    LOOP
                        held := NULL;
                        -- Counts the notification unless the window is full; the upsert locks the
                        -- row, so concurrent deciders count one at a time.
                        IF l.n > 0 THEN
                            INSERT INTO throttle_windows AS w (recipient, rule, window_start, window_end, count)
                            VALUES (r.r, l.rule, l.ws, l.we, 1)
                            ON CONFLICT (recipient, rule, window_start) DO UPDATE SET count = w.count + 1
                            WHERE w.count < l.n
                            RETURNING w.count INTO held;
                        END IF;
                        IF held IS NULL THEN
                            v_reason := l.reason; v_due := l.due; v_effect := l.fx; v_rule := l.rule; v_window := l.ws;
                            -- Not sent after all: the windows counted before this one give it back.
                            -- Row by row, by key: a join here gets a generic plan that scans the table.
                            FOR g IN SELECT * FROM jsonb_to_recordset(r.limits) AS y(rule text, ws bigint) LIMIT counted LOOP
                                UPDATE throttle_windows w SET count = w.count - 1
                                WHERE w.recipient = r.r AND w.rule = g.rule AND w.window_start = g.ws;
                            END LOOP;
                            EXIT;
                        END IF;
                        counted := counted + 1;
                    END LOOP;
                END IF;
                IF v_effect = 'digest' THEN
                    INSERT INTO digest_items (recipient, rule, window_start, event_id, kind, payload, added_at)
                    VALUES (r.r, v_rule, v_window, r.e, r.k, r.p, r.at);
                    INSERT INTO due_work (type, due_at, recipient, rule, window_start)
                    VALUES ('digest', v_due, r.r, v_rule, v_window)
                    ON CONFLICT (recipient, rule, window_start) WHERE type = 'digest' DO NOTHING;
                ELSIF v_effect = 'schedule' THEN
                    INSERT INTO due_work AS w (type, due_at, recipient, event_time, event_id, kind, payload)
                    VALUES ('deferred', v_due, r.r, r.t, r.e, r.k, r.p)
                    ON CONFLICT (event_time, event_id, kind, recipient) WHERE type = 'deferred'
                    DO UPDATE SET due_at = excluded.due_at, payload = excluded.payload, claimed_until = NULL;
                END IF;
                IF NOT inserted OR v_reason <> r.reason OR v_due IS DISTINCT FROM r.due THEN
                    UPDATE decisions d SET reason = v_reason, due_at = v_due, decided_at = r.at
                    WHERE d.event_time = r.t AND d.event_id = r.e AND d.kind = r.k AND d.recipient = r.r;
                END IF;
                o_index := r.i; o_reason := v_reason; o_due := v_due; o_redelivered := false;
                RETURN NEXT;
            END LOOP;
        END $$;
        """,
        // 7: users deleted (`user.deleted`): a change for the user dated no later than the deletion
        // is ignored, until the purge forgets the deletion a retention after it was applied (see
        // SQLiteStore.deleteUser for the rules). Deferred notifications by recipient, for the
        // deletion to find them without reading all due work.
        """
        CREATE TABLE deleted_users (user_id text PRIMARY KEY, deleted_at bigint NOT NULL, applied_at bigint NOT NULL);
        CREATE INDEX due_deferred_by_recipient ON due_work (recipient) WHERE type = 'deferred';
        CREATE OR REPLACE FUNCTION herald_apply(batch jsonb) RETURNS void LANGUAGE plpgsql
        SET enable_seqscan = off SET jit = off AS $$
        DECLARE
            e record;
        BEGIN
            FOR e IN SELECT * FROM jsonb_to_recordset(batch) AS x(
                t text, u text, d text, pl text, pv text, tk text, a text, sb boolean, l text, tz text, doc text, at bigint)
            LOOP
                -- Older than the user's deletion: the user stays deleted.
                CONTINUE WHEN e.t IN ('registered', 'profile', 'preferences')
                    AND EXISTS (SELECT 1 FROM deleted_users g WHERE g.user_id = e.u AND g.deleted_at >= e.at);
                IF e.t = 'registered' THEN
                    -- A newer registration of the same token elsewhere wins over this one.
                    CONTINUE WHEN EXISTS (SELECT 1 FROM devices v WHERE v.provider = e.pv AND v.token = e.tk
                        AND v.registered_at > e.at AND NOT (v.user_id = e.u AND v.device_id = e.d));
                    -- The token moves: it leaves whatever user or device had it before.
                    DELETE FROM devices v WHERE v.provider = e.pv AND v.token = e.tk AND NOT (v.user_id = e.u AND v.device_id = e.d);
                    INSERT INTO devices AS v (user_id, device_id, platform, provider, token, app_id, sandbox, locale, registered_at)
                    VALUES (e.u, e.d, e.pl, e.pv, e.tk, e.a, e.sb, e.l, e.at)
                    ON CONFLICT (user_id, device_id) DO UPDATE SET platform = excluded.platform, provider = excluded.provider,
                        token = excluded.token, app_id = excluded.app_id, sandbox = excluded.sandbox, locale = excluded.locale,
                        registered_at = excluded.registered_at
                    WHERE excluded.registered_at >= v.registered_at;
                ELSIF e.t = 'unregistered' THEN
                    DELETE FROM devices v WHERE v.user_id = e.u AND v.device_id = e.d AND v.registered_at <= e.at;
                ELSIF e.t = 'invalidated' THEN
                    INSERT INTO invalid_tokens AS i (provider, token, invalidated_at) VALUES (e.pv, e.tk, e.at)
                    ON CONFLICT (provider, token) DO UPDATE SET invalidated_at = greatest(i.invalidated_at, excluded.invalidated_at);
                ELSIF e.t = 'profile' THEN
                    INSERT INTO profiles AS p (user_id, locale, time_zone, updated_at) VALUES (e.u, e.l, e.tz, e.at)
                    ON CONFLICT (user_id) DO UPDATE SET locale = coalesce(excluded.locale, p.locale),
                        time_zone = coalesce(excluded.time_zone, p.time_zone), updated_at = excluded.updated_at
                    WHERE excluded.updated_at >= p.updated_at;
                ELSIF e.t = 'preferences' THEN
                    INSERT INTO preferences AS p (user_id, document, updated_at) VALUES (e.u, e.doc, e.at)
                    ON CONFLICT (user_id) DO UPDATE SET document = excluded.document, updated_at = excluded.updated_at
                    WHERE excluded.updated_at >= p.updated_at;
                ELSIF e.t = 'deleted' THEN
                    INSERT INTO deleted_users AS g (user_id, deleted_at, applied_at)
                    VALUES (e.u, e.at, (extract(epoch FROM clock_timestamp()) * 1000)::bigint)
                    ON CONFLICT (user_id) DO UPDATE SET deleted_at = greatest(g.deleted_at, excluded.deleted_at),
                        applied_at = excluded.applied_at;
                    DELETE FROM devices v WHERE v.user_id = e.u AND v.registered_at <= e.at;
                    DELETE FROM profiles p WHERE p.user_id = e.u AND p.updated_at <= e.at;
                    DELETE FROM preferences p WHERE p.user_id = e.u AND p.updated_at <= e.at;
                    -- Waiting notifications hold rendered text about the user.
                    DELETE FROM due_work w WHERE w.type = 'deferred' AND w.recipient = e.u AND w.event_time <= e.at;
                    DELETE FROM digest_items i WHERE i.recipient = e.u AND i.added_at <= e.at;
                    DELETE FROM due_work w WHERE w.type = 'digest' AND w.recipient = e.u AND NOT EXISTS (
                        SELECT 1 FROM digest_items i
                        WHERE i.recipient = w.recipient AND i.rule = w.rule AND i.window_start = w.window_start);
                ELSE
                    RAISE EXCEPTION 'herald_apply: unknown change type %', e.t;
                END IF;
            END LOOP;
        END $$;
        """,
        // 8: invalidations by time, for the purge to find those older than the retention (with the
        // devices they killed) without reading them all.
        """
        CREATE INDEX invalid_tokens_by_time ON invalid_tokens (invalidated_at);
        """,
        // 9: herald_apply, then each user who registered a device kept within max_devices (the
        // most recently registered, as the worker orders them), in the same transaction; returns
        // the user of each device removed. A wrapper, so herald_apply's body is not repeated.
        """
        CREATE FUNCTION herald_apply_capped(batch jsonb, max_devices integer) RETURNS SETOF text
        LANGUAGE plpgsql SET enable_seqscan = off AS $$
        BEGIN
            PERFORM herald_apply(batch);
            RETURN QUERY
            WITH registering AS (
                SELECT DISTINCT x.u FROM jsonb_to_recordset(batch) AS x(t text, u text) WHERE x.t = 'registered'
            ), ranked AS (
                SELECT v.user_id, v.device_id,
                    row_number() OVER (PARTITION BY v.user_id ORDER BY v.registered_at DESC, v.device_id DESC) AS n
                FROM devices v JOIN registering r ON v.user_id = r.u
            )
            DELETE FROM devices v USING ranked k
            WHERE v.user_id = k.user_id AND v.device_id = k.device_id AND k.n > max_devices
            RETURNING v.user_id;
        END $$;
        """,
        // 10: the worker keys an event without a `time` by its record's timestamp, no longer at time
        // 0. The entries it decided at time 0 answer redeliveries until purged, as migration 5's do:
        // a horizon, unless that migration's already reaches past them. (They are the key's
        // leading range: finding them reads no more of the ledger than they are.)
        """
        INSERT INTO decisions_legacy_horizon SELECT max(decided_at) FROM decisions WHERE event_time = 0
            HAVING count(*) > 0
                AND max(decided_at) > (SELECT coalesce(max(decided_at), -1) FROM decisions_legacy_horizon);
        """,
        // 11: the device limit ranks devices registered in the same millisecond as Swift orders
        // their ids (the worker, the memory store and SQLite): by Unicode scalars after NFC
        // normalization. Ranked in the database's collation, an English one put "phone" before
        // "Phone" and C put a decomposed "é" before "f", so PostgreSQL removed another device than
        // the other stores would. `normalize` needs a UTF8 database; any other keeps byte order.
        """
        CREATE OR REPLACE FUNCTION herald_apply_capped(batch jsonb, max_devices integer) RETURNS SETOF text
        LANGUAGE plpgsql SET enable_seqscan = off AS $$
        DECLARE
            nfc boolean := current_setting('server_encoding') = 'UTF8';
        BEGIN
            PERFORM herald_apply(batch);
            RETURN QUERY
            WITH registering AS (
                SELECT DISTINCT x.u FROM jsonb_to_recordset(batch) AS x(t text, u text) WHERE x.t = 'registered'
            ), ranked AS (
                SELECT v.user_id, v.device_id,
                    row_number() OVER (
                        PARTITION BY v.user_id
                        ORDER BY v.registered_at DESC,
                            (CASE WHEN nfc THEN normalize(v.device_id, NFC) ELSE v.device_id END) COLLATE "C" DESC
                    ) AS n
                FROM devices v JOIN registering r ON v.user_id = r.u
            )
            DELETE FROM devices v USING ranked k
            WHERE v.user_id = k.user_id AND v.device_id = k.device_id AND k.n > max_devices
            RETURNING v.user_id;
        END $$;
        """,
    ]

    /// One migration's statements, one at a time: the extended query protocol takes one statement
    /// per query. A statement ends at a line ending in `;` outside a `$$` function body.
    static func statements(_ migration: String) -> [String] {
        var statements: [String] = []
        var current: [Substring] = []
        var inBody = false
        for line in migration.split(separator: "\n", omittingEmptySubsequences: false) {
            current.append(line)
            if line.components(separatedBy: "$$").count % 2 == 0 { inBody.toggle() }
            if !inBody && line.hasSuffix(";") {
                statements.append(current.joined(separator: "\n"))
                current = []
            }
        }
        let rest = current.joined(separator: "\n").trimmingCharacters(in: .whitespacesAndNewlines)
        if !rest.isEmpty { statements.append(rest) }
        return statements
    }
}
