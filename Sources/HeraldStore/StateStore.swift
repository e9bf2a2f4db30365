import HeraldEvents
import HeraldPolicy

/// Herald's shared state: the recipient directory, and the decisions made for it — the decision
/// ledger, throttle windows, digest buffers and deferred notifications.
///
/// Two implementations pass one contract suite: ``SQLiteStore`` (embedded; one process) and
/// ``PostgresStore`` (any number of workers). A batch is one transaction, and on PostgreSQL one round
/// trip, whatever its size.
public protocol StateStore: Directory, DeliveryLedger {
    /// Resolves each request's plan against the ledger and the throttle windows, in order, and
    /// records the decisions and their effects in one transaction. A request whose key the ledger
    /// already holds gets the recorded decision back (``Decision/redelivered``) and changes nothing.
    /// Limits are checked and counted atomically: workers sharing the store never let more than a
    /// limit through.
    func decide(_ requests: [DecisionRequest]) async throws(StoreError) -> [Decision]

    /// Claims up to `limit` deferred notifications and digests due at `now`, oldest first, for
    /// `lease`: no other caller gets them unless the lease runs out before ``complete(_:)`` (the
    /// claimer crashed). With PostgreSQL, concurrent claimers skip each other's rows.
    func claimDue(now: Timestamp, limit: Int, lease: Duration) async throws(StoreError) -> [DueWork]

    /// When the earliest deferred notification or digest not yet completed comes due, if any:
    /// replay steps its event-time clock to it, so that due work fires between the events it fell
    /// between.
    func nextDueAt() async throws(StoreError) -> Timestamp?

    /// Marks claimed work done: deletes it, and a digest's items that were handed out with it.
    /// Work rescheduled since it was claimed (a deferral deferred again) stays.
    func complete(_ work: [DueWork]) async throws(StoreError)

    /// Deletes ledger entries decided before `before`, throttle windows that ended before it, the
    /// record of users deleted (applied) before it (``DirectoryEvent/userDeleted(userID:at:)``),
    /// and devices whose token was invalidated before it with those invalidations, in
    /// transactions of at most ``purgeChunk`` ledger entries, so that a purge of a large backlog never
    /// holds up the deciding transactions for long. Returns how many ledger entries it deleted.
    @discardableResult
    func purge(before: Timestamp) async throws(StoreError) -> Int

    /// Refreshes the query planner's statistics: after a bulk load (`herald directory import`),
    /// before the database's own maintenance has caught up, lookups would otherwise be planned as
    /// scans of whole tables.
    func analyze() async throws(StoreError)
}

/// The identity of one decision: the same (event, kind, recipient) is decided once.
///
/// An event is its id and, if it has one, its own time (CloudEvents `time`): a redelivered record
/// carries both unchanged. The ledger is ordered by the time first, so a batch's inserts land
/// near its end whatever the ids look like; ordered by random ids (UUIDv4), each insert dirtied
/// a page of its own, which the commit and the checkpoint then wrote (see docs/store.md).
public struct DecisionKey: Sendable, Hashable {
    public var eventID: String
    public var kind: String
    public var recipient: String
    /// The event's own time; `nil` for an event without one, which is then told apart by its id
    /// alone.
    public var eventTime: Timestamp?

    public init(eventID: String, kind: String, recipient: String, eventTime: Timestamp?) {
        self.eventID = eventID
        self.kind = kind
        self.recipient = recipient
        self.eventTime = eventTime
    }

    /// The event time as both ledgers store it: 0 for none.
    var storedEventTime: Int64 { eventTime?.epochMilliseconds ?? 0 }

    // The event id and the recipient by their bytes (``OpaqueID``), as the ledgers compare them.
    public static func == (lhs: DecisionKey, rhs: DecisionKey) -> Bool {
        lhs.eventTime == rhs.eventTime && lhs.kind == rhs.kind && lhs.eventID.hasSameBytes(as: rhs.eventID)
            && lhs.recipient.hasSameBytes(as: rhs.recipient)
    }

    public func hash(into hasher: inout Hasher) {
        eventID.hashBytes(into: &hasher)
        hasher.combine(kind)
        recipient.hashBytes(into: &hasher)
        hasher.combine(eventTime)
    }

    /// The key a ledger row holds, `storedTime` as ``storedEventTime`` wrote it.
    init(eventID: String, kind: String, recipient: String, storedTime: Int64) {
        self.init(
            eventID: eventID,
            kind: kind,
            recipient: recipient,
            eventTime: storedTime == 0 ? nil : Timestamp(epochMilliseconds: storedTime)
        )
    }
}

/// One (event, recipient) pair for the store to decide.
public struct DecisionRequest: Sendable {
    public var key: DecisionKey
    public var plan: DecisionPlan
    /// The clock's time of the decision (event time in replay).
    public var decidedAt: Timestamp
    /// The event as received, kept with a deferred or digested notification so it can be rendered
    /// when it comes due. Written out only when a store keeps it: most decisions that could
    /// digest do not, and writing an event out costs more than deciding it.
    public var payload: String { makePayload?() ?? "" }
    /// Nil for a request whose event no store keeps: most of them, and a closure made for each
    /// (capturing the event) was an allocation and a release per decision.
    private let makePayload: (@Sendable () -> String)?
    /// A deferred notification that came due and is decided again: it replaces its `deferred.*`
    /// ledger entry instead of being answered as a redelivery.
    public var resumesDeferral: Bool

    public init(
        key: DecisionKey,
        plan: DecisionPlan,
        decidedAt: Timestamp,
        payload: @autoclosure @escaping @Sendable () -> String,
        resumesDeferral: Bool = false
    ) {
        self.key = key
        self.plan = plan
        self.decidedAt = decidedAt
        self.makePayload = payload
        self.resumesDeferral = resumesDeferral
    }

    /// A request whose event is not kept: its plan leaves nothing that may come due later
    /// (``DecisionPlan/mayLeaveWorkDue`` is false), so its ``payload`` is empty. A plan that may
    /// leave work due needs the event: use the initializer that takes the payload.
    public init(key: DecisionKey, plan: DecisionPlan, decidedAt: Timestamp) {
        assert(!plan.mayLeaveWorkDue, "a plan that may leave work due needs its event's payload")
        self.key = key
        self.plan = plan
        self.decidedAt = decidedAt
        self.makePayload = nil
        self.resumesDeferral = false
    }
}

/// A recorded decision.
public struct Decision: Sendable, Hashable {
    public var key: DecisionKey
    public var reason: DecisionReason
    /// When a deferred notification or a digest comes due.
    public var dueAt: Timestamp?
    /// The ledger already held this key: the reason is the one recorded then, and nothing was
    /// counted again.
    public var redelivered: Bool
    /// A redelivery's: when the recorded decision was made (the ledger's decision time), so that a
    /// reader can place it where it was counted. A redelivery can come a throttle window or more
    /// later, after a worker that decided the event died before its records went out.
    public var recordedAt: Timestamp?

    public init(
        key: DecisionKey,
        reason: DecisionReason,
        dueAt: Timestamp?,
        redelivered: Bool,
        recordedAt: Timestamp? = nil
    ) {
        self.key = key
        self.reason = reason
        self.dueAt = dueAt
        self.redelivered = redelivered
        self.recordedAt = recordedAt
    }

    /// The label for metrics and `herald.decisions`: redeliveries are counted as `duplicate`.
    public var label: DecisionReason { redelivered ? .duplicate : reason }
}

/// A deferred notification or a digest that came due, claimed by one caller.
public struct DueWork: Sendable, Hashable {
    public enum Work: Sendable, Hashable {
        /// Decide `key` again (``DecisionRequest/resumesDeferral``) and send it if it passes.
        case deferred(DecisionKey, payload: String)
        /// Send one summary of `items`, oldest first.
        case digest(ThrottleKey, items: [DigestItem])
    }

    /// The store's id for the claim.
    public var id: Int64
    public var dueAt: Timestamp
    public var work: Work
    /// When the claim runs out.
    public var claimedUntil: Timestamp

    public init(id: Int64, dueAt: Timestamp, work: Work, claimedUntil: Timestamp) {
        self.id = id
        self.dueAt = dueAt
        self.work = work
        self.claimedUntil = claimedUntil
    }
}

/// One notification collected into a digest.
public struct DigestItem: Sendable, Hashable {
    public var id: Int64
    public var key: DecisionKey
    public var payload: String
    public var addedAt: Timestamp

    public init(id: Int64, key: DecisionKey, payload: String, addedAt: Timestamp) {
        self.id = id
        self.key = key
        self.payload = payload
        self.addedAt = addedAt
    }
}

extension DecisionReason {
    /// Deferred reasons: the notification comes back when it is due.
    var isDeferral: Bool { self == .deferredQuietHours || self == .deferredThrottle }
}

extension PolicyOutcome {
    /// The one effect that outlives the decision, if any, in the stores' encoding.
    var heldEffect: HeldEffect {
        for effect in effects {
            switch effect {
            case .addToDigest(let key, let flushAt): return .digest(key, flushAt: flushAt)
            case .schedule(let at): return .schedule(at: at)
            case .count: continue
            }
        }
        return .none
    }
}

/// What a decision leaves behind to come due later.
enum HeldEffect: Equatable {
    case none
    case digest(ThrottleKey, flushAt: Timestamp)
    case schedule(at: Timestamp)
}

/// Ledger entries (and deliveries) deleted per transaction by a purge.
package let purgeChunk = 5000
