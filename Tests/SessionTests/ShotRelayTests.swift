import Pipeline
import Testing

@testable import Session

/// The relay's merge, in every order it can happen on a device: the integration test (BayTests) cannot choose when a
/// relay arrives (that waits on both devices' clock relations), so the orders are proven here.
@Suite("ShotRelay: a bay-mate's shot and this device's own are one swing, whichever comes first")
struct ShotRelayTests {
    func own(_ id: UInt64, atMs ms: Int64) -> DetectedImpact {
        DetectedImpact(
            id: id, onsetSample: 0, impactSample: 0, t0Ns: ms * 1_000_000, score: 0.9, features: [:],
            tofCorrectionSamples: nil,
            tofProvenance: "none declared", decidedAtSample: 0)
    }
    func relay(_ id: UInt64, atMs ms: Int64, uncertaintyMs: Int64 = 1) -> RelayedShot {
        RelayedShot(id: id, t0Ns: ms * 1_000_000, uncertaintyNs: uncertaintyMs * 1_000_000, from: "face")
    }

    @Test func aRelayThatFindsTheSwingAlreadyHeardIsDropped() {
        var r = ShotRelay()
        #expect(r.arrive(relay(7, atMs: 3_020), own: [own(1, atMs: 3_000)]) == nil)
        #expect(r.merged == 1 && r.numbered == 0 && r.relayed.isEmpty)
    }

    @Test func aRelayWaitingIsWithdrawnWhenTheSwingIsHeardHere() throws {
        var r = ShotRelay()
        let arrived = r.arrive(relay(7, atMs: 3_000), own: [])
        let waiting = try #require(arrived)
        #expect(waiting.id & ShotRelay.idBit != 0 && r.isRelayed(waiting.id))
        #expect(r.trigger(of: waiting.id) == "relayed from face ± 1000 µs")
        #expect(r.heard(own(1, atMs: 3_030), waiting: [waiting]) == waiting.id)
        #expect(r.merged == 1 && r.relayed.isEmpty && r.trigger(of: waiting.id) == "heard")
    }

    @Test func aRelayFartherThanToleranceAndUncertaintyIsAnotherSwing() throws {
        var r = ShotRelay()
        // 50 ms tolerance + 10 ms uncertainty: 61 ms away is another swing, 60 ms is the same one.
        let arrived = r.arrive(relay(1, atMs: 3_061, uncertaintyMs: 10), own: [own(1, atMs: 3_000)])
        let other = try #require(arrived)
        #expect(r.merged == 0 && r.isRelayed(other.id))
        #expect(r.arrive(relay(2, atMs: 5_060, uncertaintyMs: 10), own: [own(2, atMs: 5_000)]) == nil)
        #expect(r.heard(own(3, atMs: 3_000 - 61), waiting: [other]) == nil)
    }

    @Test func theSameRelayTwiceIsOneShot() {
        var r = ShotRelay()
        #expect(r.arrive(relay(9, atMs: 1_000), own: []) != nil)
        #expect(r.arrive(relay(9, atMs: 1_000), own: []) == nil)
        #expect(r.numbered == 1 && r.merged == 0)
    }

    @Test func anOwnShotIsNeverTakenForARelay() {
        var r = ShotRelay()
        #expect(r.heard(own(1, atMs: 1_000), waiting: [own(2, atMs: 1_000)]) == nil)
    }
}
