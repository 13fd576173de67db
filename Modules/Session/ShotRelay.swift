import Pipeline

/// Shots a bay-mate heard, relayed by the host, merged with the session's own (pure bookkeeping, as `CandidateBook`: the
/// runner holds its lock).
///
/// One swing is one clip per device: a relayed shot within `toleranceNs` (plus its uncertainty) of a shot this session
/// heard itself is the same swing. Whichever comes first waits to be minted; an own shot withdraws a relayed one still
/// waiting (a microphone's t0 is the finer), and a relayed shot that finds an own one is dropped.
struct ShotRelay: Sendable {
    /// How far a bay-mate's t0 may lie from this session's own for the same swing, beyond the relay's uncertainty
    /// (assumed: a detector's onset jitter and the sound's travel across a bay, 50 ms).
    static let toleranceNs: Int64 = 50_000_000
    /// Relayed shots' ids carry this bit: they never collide with the detector's candidate ids.
    static let idBit = SessionContext.relayedShotBit

    /// Each relayed shot kept, by the session's id for it.
    private(set) var relayed: [UInt64: RelayedShot] = [:]
    /// Relayed shots dropped or withdrawn because this session heard the swing too.
    private(set) var merged = 0
    /// Relayed shots numbered so far (1, 2, …; the host's own numbers are kept in `relayed`).
    private(set) var numbered: UInt64 = 0
    /// The host's relay ids seen, so the same relay twice (a reconnect) is one shot.
    private(set) var seen = Set<UInt64>()

    /// Whether shot `id` came from a bay-mate.
    func isRelayed(_ id: UInt64) -> Bool { relayed[id] != nil }

    /// How shot `id` was known, for meta.json and the catalogue: "heard", or "relayed from DEVICE ± N µs".
    func trigger(of id: UInt64) -> String {
        guard let r = relayed[id] else { return "heard" }
        return "relayed from \(r.from) ± \(r.uncertaintyNs / 1_000) µs"
    }

    static func same(_ a: Int64, _ b: Int64, uncertaintyNs: Int64) -> Bool {
        let (d, o) = a.subtractingReportingOverflow(b)
        return !o && d.magnitude <= UInt64(toleranceNs) + UInt64(max(0, uncertaintyNs))
    }

    /// A relayed shot arrived: the shot to add to the book, or nil when one of this session's shots is the same swing.
    mutating func arrive(_ r: RelayedShot, own shots: [DetectedImpact]) -> DetectedImpact? {
        guard seen.insert(r.id).inserted else { return nil }  // the same relay twice (a reconnect) is one shot
        if shots.contains(where: { !isRelayed($0.id) && Self.same($0.t0Ns, r.t0Ns, uncertaintyNs: r.uncertaintyNs) }) {
            merged += 1
            return nil
        }
        numbered += 1
        let id = Self.idBit | numbered
        relayed[id] = r
        return DetectedImpact(
            id: id, onsetSample: -1, impactSample: -1, t0Ns: r.t0Ns, score: 1, features: [:], tofCorrectionSamples: nil,
            tofProvenance: "relayed: \(r.from) heard it; t0 on this clock through both clock relations",
            decidedAtSample: -1)
    }

    /// This session heard a shot: the relayed one waiting for the same swing, if any, to withdraw.
    mutating func heard(_ shot: DetectedImpact, waiting: [DetectedImpact]) -> UInt64? {
        guard
            let same = waiting.first(where: {
                isRelayed($0.id) && Self.same($0.t0Ns, shot.t0Ns, uncertaintyNs: relayed[$0.id]!.uncertaintyNs)
            })
        else { return nil }
        merged += 1
        relayed[same.id] = nil  // never minted: it is not counted as a relayed shot
        return same.id
    }
}
