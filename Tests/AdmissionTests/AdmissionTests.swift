import Foundation
import Syscall
import Testing

@testable import Admission

/// Connections that have not said who they are are bounded per peer and overall, the oldest silent one making room;
/// lines about them are throttled.
@Suite("Admission: pending connections and throttled lines")
struct AdmissionTests {
    final class Shut: @unchecked Sendable {
        // @unchecked: behind its own lock.
        let names = Guarded<[String]>([])
        func closer(_ name: String) -> @Sendable () -> Void { { [self] in names.withLock { $0.append(name) } } }
    }

    /// A peer past its bound loses its own oldest; past the overall bound the busiest peer's oldest makes room; nobody
    /// new is turned away; a settled connection no longer counts.
    @Test func theOldestSilentConnectionMakesRoom() {
        let pending = PendingConnections(.init(perPeer: 2, overall: 3))
        let shut = Shut()
        let (a1, e1) = pending.admit(peer: "a", shutdown: shut.closer("a1"))
        let (_, e2) = pending.admit(peer: "a", shutdown: shut.closer("a2"))
        #expect(e1 == nil && e2 == nil)
        // A third from "a": its oldest goes, whoever else is waiting.
        let (_, e3) = pending.admit(peer: "a", shutdown: shut.closer("a3"))
        #expect(e3?.peer == "a" && e3?.perPeer == true && shut.names.withLock { $0 } == ["a1"])
        pending.ended(a1)  // its thread ends afterwards: already gone from the count
        #expect(pending.counts.pending == 2)
        // "b" fills the overall bound; "c" then takes the place of the busiest peer's ("a") oldest.
        let (b1, _) = pending.admit(peer: "b", shutdown: shut.closer("b1"))
        let (_, e5) = pending.admit(peer: "c", shutdown: shut.closer("c1"))
        #expect(e5?.peer == "a" && e5?.perPeer == false && shut.names.withLock { $0 } == ["a1", "a2"])
        #expect(pending.counts == (pending: 3, evicted: 2))
        pending.settled(b1)
        #expect(pending.counts.pending == 2)
    }

    @Test func linesOfAKindAreThrottledAndTheHeldOnesCounted() {
        let throttle = LogThrottle(burst: 2, windowNs: 1_000)
        #expect(throttle.pass("refused", "a", nowNs: 0) == "a")
        #expect(throttle.pass("refused", "b", nowNs: 1) == "b")
        #expect(throttle.pass("refused", "c", nowNs: 2) == nil)
        #expect(throttle.pass("refused", "d", nowNs: 3) == nil)
        #expect(throttle.pass("other", "x", nowNs: 4) == "x")
        #expect(throttle.held == ["refused": 2])
        #expect(throttle.pass("refused", "e", nowNs: 1_000) == "e (and 2 more like it not shown)")
        #expect(throttle.held.isEmpty)
    }
}
