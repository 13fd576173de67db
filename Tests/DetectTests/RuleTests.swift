import Synchronization
import Testing

@testable import Detect
@testable import Synthetic

/// Each rule of the decision (Modules/Detect/README.md's table) at work: on a RoomCorpus tuning session it refuses at
/// least one event that is no impact — the sound it was written for — and, where it never refused an impact on the
/// tuning sessions it was fitted on, it refuses none there either. The whole decision is judged by `detect eval`; this
/// proves each rule still does its part after any change to the table.
@Suite("Detect rules: each refuses what it was written for")
struct RuleTests {
    /// A tuning session (RoomCorpus kind and seed) where each rule refuses a distractor, found with `ppc-tool detect
    /// events`, and whether the rule refused any impact across the tuning sessions then (2026-12-04: 16 room sessions
    /// of each kind, 12 impact ones of each; the bouncing ball's from `BounceTests`).
    static let witnesses: [Rule: (kind: RoomCorpus.Kind, seed: UInt64, refusesNoImpact: Bool)] = [
        .slowRise: (.clean, 1, false), .slowDecay: (.clean, 1, false), .narrowband: (.clean, 1, false),
        .voice: (.clean, 1, true), .throughAWall: (.clean, 11, true), .hiss: (.clean, 1, false),
        .burstOfNoise: (.clean, 1, true), .slowAttack: (.clean, 1, false), .slowAttackForItsBreadth: (.clean, 4, true),
        .reflection: (.hard, 2, true), .bouncingBall: (.clean, 18, true), .unstruck: (.clean, 1, true),
    ]

    static let sessions = Mutex<[String: ImpactCorpus.Session]>([:])

    static func session(_ kind: RoomCorpus.Kind, _ seed: UInt64) -> ImpactCorpus.Session {
        let key = "\(kind.rawValue)-\(seed)"
        if let s = sessions.withLock({ $0[key] }) { return s }
        let s = RoomCorpus.session(kind, seed: seed)
        sessions.withLock { $0[key] = s }
        return s
    }

    @Test func everyRuleHasAWitness() {
        #expect(Set(Self.witnesses.keys) == Set(Rule.allCases))
    }

    @Test(arguments: Rule.allCases)
    func aRuleRefusesTheSoundItWasWrittenFor(_ rule: Rule) throws {
        let w = try #require(Self.witnesses[rule])
        let s = Self.session(w.kind, w.seed)
        let d = ImpactDetector(.init(sampleRate: s.sampleRate))
        var refused: [Int64] = []
        d.trace = { at, _, decision in if decision == .rejected(rule) { refused.append(at) } }
        s.samples.withUnsafeBufferPointer { d.process($0) { _ in } }
        // An event's trigger lies within a few blocks after its onset; an impact's truth is its onset.
        func isImpact(_ at: Int64) -> Bool { s.impacts.contains { at - $0 < 64 && $0 - at < 160 } }
        #expect(refused.contains { !isImpact($0) }, "\(rule) refused nothing but impacts in \(s.name): \(refused)")
        if w.refusesNoImpact { #expect(!refused.contains(where: isImpact), "\(rule) refused an impact in \(s.name)") }
    }

    @Test func aDecisionSaysItsRuleOrItsAdmission() {
        #expect(Decision.rejected(.hiss).description == "rejected: hiss" && Decision.rejected(.hiss).rejection == .hiss)
        #expect(
            Decision.accepted(.struck).description == "accepted (struck)" && Decision.accepted(.struck).rejection == nil
        )
    }
}
