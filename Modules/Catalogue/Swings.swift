/// How a clip becomes an angle of a swing, once, when it is catalogued — and never again: a swing keeps the id it was
/// given by its first angle, so a page, a star or a note on it outlives every angle that arrives later.
///
/// A clip joins a swing when, on the same host boot (host-clock times compare only within one) and in the same bay (or
/// both in none):
/// - their host-clock t0s agree within both uncertainties plus `toleranceNs` (the swing's first angle is the anchor),
/// - the swing has no angle of the clip's device yet, and
/// - every angle arrived within `arrivalWindowNs` of it on the host's monotonic clock (a swing's angles arrive within a
///   post-roll, a mint and a delivery of each other: two runs of a demo minutes apart never make one swing).
/// Of several such swings, the one whose t0 is nearest. Otherwise the clip begins a swing of its own, named by its id.
public struct SwingRule: Sendable {
    /// How far two devices' t0 may differ beyond their stated uncertainties (assumed: a detector's onset jitter, 20 ms).
    public var toleranceNs: Int64 = 20_000_000
    /// How far apart a swing's angles may arrive (assumed: two minutes, a slow link's delivery with room to spare).
    public var arrivalWindowNs: Int64 = 120_000_000_000

    public init(toleranceNs: Int64 = 20_000_000, arrivalWindowNs: Int64 = 120_000_000_000) {
        self.toleranceNs = toleranceNs
        self.arrivalWindowNs = arrivalWindowNs
    }

    /// The id of the swing `clip` joins among `known` (clips already placed), or nil: a swing of its own.
    public func swing(for clip: CatalogueClip, among known: [CatalogueClip]) -> String? {
        guard let t = clip.t0HostNs, let boot = clip.hostBoot, let arrived = clip.receivedMonoNs else { return nil }
        let placed = known.filter {
            $0.swingID != nil && $0.clipID != clip.clipID && $0.hostBoot == boot && $0.bay == clip.bay
        }
        var best: (id: String, distance: UInt64)?
        for (id, angles) in Dictionary(grouping: placed, by: { $0.swingID! }) {
            guard !angles.contains(where: { $0.device == clip.device }),
                angles.allSatisfy({ a in
                    a.receivedMonoNs.map { Catalogue.within(arrived, $0, 0, 0, arrivalWindowNs) } ?? false
                }),
                let anchor = angles.min(by: {
                    ($0.receivedSeq ?? .max, $0.clipID) < ($1.receivedSeq ?? .max, $1.clipID)
                }),
                let at = anchor.t0HostNs,
                Catalogue.within(t, at, clip.t0UncertaintyNs, anchor.t0UncertaintyNs, toleranceNs)
            else { continue }
            let distance = t.subtractingReportingOverflow(at).partialValue.magnitude
            if best == nil || distance < best!.distance || (distance == best!.distance && id < best!.id) {
                best = (id, distance)
            }
        }
        return best?.id
    }
}

extension Catalogue {
    /// Swings as the catalogue placed them, newest first (by the order the host received each swing's first angle);
    /// a clip not placed (none should be) is a swing of its own, and the oldest. Within a swing, angles in the order
    /// they arrived.
    public static func placedSwings(_ clips: [CatalogueClip]) -> [[CatalogueClip]] {
        let order = { (a: CatalogueClip, b: CatalogueClip) in
            (a.receivedSeq ?? .max, a.clipID) < (b.receivedSeq ?? .max, b.clipID)
        }
        // A clip with no place in the order (recorded by hand, never placed) counts as the oldest.
        let newer = { (a: CatalogueClip, b: CatalogueClip) in
            (a.receivedSeq ?? 0, a.clipID) > (b.receivedSeq ?? 0, b.clipID)
        }
        return Dictionary(grouping: clips, by: { $0.swingID ?? $0.clipID }).values
            .map { $0.sorted(by: order) }
            .sorted { newer($0[0], $1[0]) }
    }

    /// For clips catalogued before swings were placed (schema 1): the order they were received in (by receivedAt, then
    /// id) and the swings the old rule made of them, each named — as before — by its smallest clip id, so a page saved
    /// then still opens.
    public static func backfill(_ clips: [CatalogueClip]) -> [(clipID: String, swingID: String, seq: Int64)] {
        var seqOf: [String: Int64] = [:]
        for (n, c) in clips.sorted(by: { ($0.receivedAt, $0.clipID) < ($1.receivedAt, $1.clipID) }).enumerated() {
            seqOf[c.clipID] = Int64(n + 1)
        }
        return swings(clips).flatMap { s in
            let id = s.map(\.clipID).min() ?? ""
            return s.map { (clipID: $0.clipID, swingID: id, seq: seqOf[$0.clipID] ?? 0) }
        }
    }
}

extension SwingRule {
    /// Where a clip not yet in a swing goes, among `known` (the clips received within `arrivalWindow(of:)` of it): the
    /// swing it joins and the angle whose flags and notes it carries (that swing's first to arrive), or a swing of its
    /// own and nothing to carry. Both catalogues (SQLite and PostgreSQL) place clips by this one rule.
    public func placement(of clip: CatalogueClip, among known: [CatalogueClip]) -> (
        swingID: String, marksFrom: CatalogueClip?
    ) {
        guard let joined = swing(for: clip, among: known) else { return (clip.clipID, nil) }
        let first = known.filter { $0.swingID == joined }.min { ($0.receivedSeq ?? .max) < ($1.receivedSeq ?? .max) }
        return (joined, first)
    }

    /// The host-monotonic range of receipts a clip's swing-mates may lie in, within its host boot (nil when the clip
    /// says neither: it begins a swing of its own).
    public func arrivalWindow(of clip: CatalogueClip) -> (boot: String, fromNs: Int64, toNs: Int64)? {
        guard let boot = clip.hostBoot, let at = clip.receivedMonoNs else { return nil }
        return (
            boot, at.subtractingReportingOverflow(arrivalWindowNs).partialValue,
            at.addingReportingOverflow(arrivalWindowNs).partialValue
        )
    }
}
