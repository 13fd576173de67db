import Foundation
import Syscall

/// Connections taken from a listener that have not yet said who they are (a link's handshake, an HTTP request's
/// headers), bounded per peer address and overall, so that silent or slow connections cannot hold the descriptors and
/// threads the real peers need.
///
/// Nobody is turned away at the door: a newcomer always gets a place, and the one that pays is the connection that has
/// been silent longest —
/// - when its peer already holds `perPeer` pending connections, that peer's oldest is shut down (a peer's own flood
///   costs it, and a coach's tablet that shares an address with an attacker still gets in: its request follows its
///   connection by a millisecond);
/// - when `overall` are pending, the oldest of the peer holding the most is shut down.
/// So the descriptors and threads held by pending connections never pass `overall`, and a device or a page whose
/// request comes at once is served however many idle connections came first.
///
/// A connection leaves the count when it has said who it is (`settled`) or ends (`ended`), whichever comes first.
/// Limits are assumed, not measured: 8 a peer (a device opens three channels; a browser six connections), 128 overall
/// (well inside the 1 024 descriptors a service is given by default).
public final class PendingConnections: @unchecked Sendable {
    // @unchecked: all state is behind `state`.
    public struct Limits: Sendable {
        public var perPeer: Int
        public var overall: Int
        public init(perPeer: Int = 8, overall: Int = 128) {
            self.perPeer = max(1, perPeer)
            self.overall = max(1, perPeer, overall)
        }
    }

    /// A pending connection's place; give it back through `settled` or `ended`.
    public struct Ticket: Hashable, Sendable { let id: UInt64 }

    struct Entry {
        let peer: String
        let shutdown: @Sendable () -> Void
        let since: Int64
    }

    struct State {
        var next: UInt64 = 0
        var pending: [UInt64: Entry] = [:]
        var perPeer: [String: Int] = [:]
        var evicted = 0

        mutating func remove(_ id: UInt64) -> Entry? {
            guard let e = pending.removeValue(forKey: id) else { return nil }
            perPeer[e.peer, default: 1] -= 1
            if perPeer[e.peer] == 0 { perPeer[e.peer] = nil }
            return e
        }

        /// The oldest pending connection of `peer`.
        func oldest(of peer: String) -> UInt64? {
            pending.filter { $0.value.peer == peer }.min {
                $0.value.since < $1.value.since || ($0.value.since == $1.value.since && $0.key < $1.key)
            }?.key
        }
    }

    public let limits: Limits
    let state = Guarded(State())

    public init(_ limits: Limits = Limits()) { self.limits = limits }

    /// What making room for a newcomer cost: the connection shut down, whose it was and how long it had been silent.
    public struct Eviction: Sendable {
        public let peer: String
        public let silentNs: Int64
        /// Why: its peer's own bound, or the overall one.
        public let perPeer: Bool
    }

    /// Counts a connection from `peer` as pending; `shutdown` ends it if it must make room later. Returns its ticket and,
    /// when room was made, whose connection was shut down for it (already shut down when this returns).
    public func admit(peer: String, shutdown: @escaping @Sendable () -> Void) -> (Ticket, Eviction?) {
        let now = monotonicNowNs()
        let (ticket, evicted, eviction): (Ticket, Entry?, Eviction?) = state.withLock { s in
            var victim: UInt64?
            var byPeer = false
            if s.perPeer[peer, default: 0] >= limits.perPeer {
                victim = s.oldest(of: peer)
                byPeer = true
            } else if s.pending.count >= limits.overall {
                let busiest = s.perPeer.max { a, b in a.value < b.value || (a.value == b.value && a.key > b.key) }?.key
                victim = busiest.flatMap { s.oldest(of: $0) }
            }
            let gone = victim.flatMap { s.remove($0) }
            if gone != nil { s.evicted += 1 }
            s.next += 1
            s.pending[s.next] = Entry(peer: peer, shutdown: shutdown, since: now)
            s.perPeer[peer, default: 0] += 1
            return (
                Ticket(id: s.next), gone,
                gone.map { Eviction(peer: $0.peer, silentNs: now - $0.since, perPeer: byPeer) }
            )
        }
        evicted?.shutdown()  // its thread's read fails, and it ends
        return (ticket, eviction)
    }

    /// The connection said who it is: it no longer counts as pending.
    public func settled(_ ticket: Ticket) { release(ticket) }

    /// The connection ended (whether or not it settled first).
    public func ended(_ ticket: Ticket) { release(ticket) }

    func release(_ ticket: Ticket) { _ = state.withLock { $0.remove(ticket.id) } }

    /// A silence as a person reads it: "2.4 s".
    public static func seconds(_ ns: Int64) -> String { String(format: "%.1f s", Double(ns) / 1e9) }

    /// Pending now, and shut down to make room for a newer one so far.
    public var counts: (pending: Int, evicted: Int) { state.withLock { ($0.pending.count, $0.evicted) } }
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
