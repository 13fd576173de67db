import Foundation
import Syscall

/// Connections taken from a listener that have not yet said who they are (no handshake finished), bounded per peer
/// address and overall, so that silent or slow connections cannot hold the descriptors and threads a device needs.
///
/// - A peer address holding `perPeer` pending connections has its next one closed at once (its own flood costs it,
///   not anyone else).
/// - When `overall` are pending, a newcomer still gets in: the oldest pending connection of the peer holding the most is
///   shut down to make room. So a paired device's connection, which finishes its handshake in milliseconds, is taken
///   however many idle ones arrived first, and the descriptors held by pending connections never pass `overall`.
///
/// A connection leaves the count when its handshake finishes (`settled`) or it ends (`ended`), whichever comes first.
/// Limits are assumed, not measured: 8 a peer (a device opens three channels; a pairing one), 128 overall (well inside
/// the 1 024 descriptors a service is given by default).
public final class PendingConnections: @unchecked Sendable {
    // @unchecked: all state is behind `state`.
    public struct Limits: Sendable {
        public var perPeer: Int
        public var overall: Int
        public init(perPeer: Int = 8, overall: Int = 128) {
            self.perPeer = max(1, perPeer)
            self.overall = max(1, overall)
        }
    }

    /// A pending connection's place; give it back through `settled` or `ended`.
    public struct Ticket: Hashable, Sendable { let id: UInt64 }

    public enum Admission: Sendable {
        case admitted(Ticket)
        /// Closed at once: its peer already holds `perPeer` pending connections.
        case refused(String)
    }

    struct Entry {
        let peer: String
        let connection: Connection
        let since: Int64
    }

    struct State {
        var next: UInt64 = 0
        var pending: [UInt64: Entry] = [:]
        var perPeer: [String: Int] = [:]
        var refused = 0
        var evicted = 0
    }

    public let limits: Limits
    let state = Guarded(State())

    public init(_ limits: Limits = Limits()) { self.limits = limits }

    /// Counts `connection` as pending, or says why it is refused (the caller closes it). May shut down the oldest
    /// pending connection of the busiest peer to make room.
    public func admit(_ connection: Connection) -> Admission {
        let peer = connection.peer
        let (admission, evict): (Admission, Connection?) = state.withLock { s in
            if s.perPeer[peer, default: 0] >= limits.perPeer {
                s.refused += 1
                return (.refused("\(peer) already has \(limits.perPeer) connections that have not finished a handshake"), nil)
            }
            var evict: Connection?
            if s.pending.count >= limits.overall {
                let busiest = s.perPeer.max { a, b in a.value < b.value || (a.value == b.value && a.key > b.key) }?.key
                if let (id, e) = s.pending.filter({ $0.value.peer == busiest }).min(by: { $0.value.since < $1.value.since }) {
                    s.pending[id] = nil
                    s.perPeer[e.peer, default: 1] -= 1
                    if s.perPeer[e.peer] == 0 { s.perPeer[e.peer] = nil }
                    s.evicted += 1
                    evict = e.connection
                }
            }
            s.next += 1
            s.pending[s.next] = Entry(peer: peer, connection: connection, since: monotonicNowNs())
            s.perPeer[peer, default: 0] += 1
            return (.admitted(Ticket(id: s.next)), evict)
        }
        evict?.shutdownNow()  // its thread's read fails, and it ends
        return admission
    }

    /// The connection finished its handshake: it no longer counts as pending.
    public func settled(_ ticket: Ticket) { release(ticket) }

    /// The connection ended (whether or not it settled first).
    public func ended(_ ticket: Ticket) { release(ticket) }

    func release(_ ticket: Ticket) {
        state.withLock { s in
            guard let e = s.pending.removeValue(forKey: ticket.id) else { return }
            s.perPeer[e.peer, default: 1] -= 1
            if s.perPeer[e.peer] == 0 { s.perPeer[e.peer] = nil }
        }
    }

    /// Pending now; refused at once for their peer's count; shut down to make room for a newer one.
    public var counts: (pending: Int, refused: Int, evicted: Int) { state.withLock { ($0.pending.count, $0.refused, $0.evicted) } }
}

/// Lines of one kind, at most `burst` in each `windowNs`; the rest are counted and the count said with the next line
/// let through. A host refusing thousands of connections a minute said each on its own line (8 553 lines in 4 minutes).
public final class LogThrottle: @unchecked Sendable {
    // @unchecked: all state is behind `state`.
    struct Kind {
        var windowStart: Int64 = .min
        var said = 0
        var held = 0
    }

    let burst: Int
    let windowNs: Int64
    let state = Guarded([String: Kind]())

    public init(burst: Int = 5, windowNs: Int64 = 10_000_000_000) {
        self.burst = burst
        self.windowNs = windowNs
    }

    /// The line to say for `line` of `kind` — with how many were held back before it — or nil when `kind` has said
    /// `burst` lines in this window already (then it is counted).
    public func pass(_ kind: String, _ line: String, nowNs: Int64 = monotonicNowNs()) -> String? {
        state.withLock { all in
            var k = all[kind, default: Kind()]
            defer { all[kind] = k }
            if k.windowStart == .min || nowNs - k.windowStart >= windowNs {
                k.windowStart = nowNs
                k.said = 0
            }
            guard k.said < burst else {
                k.held += 1
                return nil
            }
            k.said += 1
            let before = k.held
            k.held = 0
            return before > 0 ? "\(line) (and \(before) more like it not shown)" : line
        }
    }

    /// Lines held back and not yet said, by kind.
    public var held: [String: Int] { state.withLock { $0.compactMapValues { $0.held > 0 ? $0.held : nil } } }
}
