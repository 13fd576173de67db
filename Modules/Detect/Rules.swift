/// The detector's decision as data: how an event may be let in (`Admission`), the rules that may refuse it (`Rule`),
/// each rule's test written once (`ImpactDetector.vetoes(_:_:_:)`), and the order they are asked in. The rules as a
/// table are in Modules/Detect/README.md; how each was found, in docs/detect-tuning.md.

/// A rule that refuses an event; its raw value is what a trace says.
public enum Rule: String, Sendable, CaseIterable, CustomStringConvertible {
    /// The energy took more than `maxRiseBlocks` to peak, or swelled again after: not sharp.
    case slowRise = "slow rise"
    /// Broad, but neither decayed nor rang, nor held several modes, nor was struck.
    case slowDecay = "slow decay"
    /// Decayed, but too little of it above 6 and 4 kHz, and it neither rang nor was struck.
    case narrowband = "narrowband"
    /// Let in by its modes, but it repeats the pulse one voice period before it.
    case voice = "a repeat (a voice)"
    /// Dark, no impulse at its onset and little above 6 kHz: the neighbouring bay through a partition.
    case throughAWall = "dark (through a wall)"
    /// Ramps up and does not ring: a fricative, a breath.
    case hiss = "hiss"
    /// Ramps up, short of broadband, neither rings nor holds several modes: a ball bouncing, a club tapping the mat.
    case burstOfNoise = "burst of noise"
    /// Reaches half its peak too slowly for an impact, and no ring or beat forgives it.
    case slowAttack = "slow attack"
    /// Broad only above 4 kHz, and neither quick nor ringing.
    case slowAttackForItsBreadth = "slow attack for its breadth"
    /// Repeats what sounded one period before it: a wall's reflection, a voice's next pulse.
    case reflection = "a repeat (a reflection)"
    /// The next term of a bouncing ball's shrinking train.
    case bouncingBall = "a bouncing ball (the next term of a shrinking train)"
    /// Quiet noise, not decayed, with nothing struck in it.
    case unstruck = "quiet noise, nothing struck (no ring, no modes, no impulse)"

    public var description: String { rawValue }
}

/// How an event was let in.
public enum Admission: String, Sendable, CaseIterable {
    /// Decayed quickly and broadband: the classic crack.
    case decaysAndBroad = "decays and broad"
    /// Broad with a periodic (ringing) tail that stands for the decay.
    case ringing
    /// Decayed, narrower, with a fast attack and a ring (two tiers).
    case narrowModal = "narrow but modal"
    /// A strong ring from an abrupt onset in a live room.
    case undecayedRing = "undecayed ring"
    /// Several modes from an abrupt onset well over the floor.
    case severalModes = "several modes"
    /// A struck object: an impulse at the onset and a ring.
    case struck
}

/// What the detector decided of one event.
public enum Decision: Sendable, Equatable, CustomStringConvertible {
    case accepted(Admission)
    case rejected(Rule)

    /// The rule that refused it, or nil when it was let in.
    public var rejection: Rule? {
        if case .rejected(let r) = self { r } else { nil }
    }

    public var description: String {
        switch self {
        case .accepted(let a): "accepted (\(a.rawValue))"
        case .rejected(let r): "rejected: \(r.rawValue)"
        }
    }
}

extension ImpactDetector {
    /// What every decision reads of an event, measured before any rule is asked.
    struct Event {
        var snrDb, decayDb, earlyDecayDb, dipDb, broadband, broadband4k: Double
        var attackSamples: Int
        var decays, wide, clipped, endsABounceTrain: Bool
    }

    /// The measures that cost more, each taken at most once and only when a rule asks for it (all of them for a
    /// trace). nil in `features`: not measured.
    struct Measures {
        let detector: ImpactDetector
        let onset: Int64
        var features: Candidate.Features

        mutating func ring() -> Double {
            if let v = features.modality { return v }
            let v = detector.modality()
            features.modality = v
            return v
        }
        mutating func quarter() -> Int {
            if let v = features.attackQuarterSamples { return v }
            let v = detector.attackSamples(from: onset, fraction: 0.25)
            features.attackQuarterSamples = v
            return v
        }
        mutating func modes() -> Double {
            if let v = features.modesDb { return v }
            let v = detector.modesDb(from: onset)
            features.modesDb = v
            return v
        }
        /// The onset's residual of the predictor `modes()` fits: modes are measured first.
        mutating func impulse() -> Double {
            if let v = features.impulseDb { return v }
            _ = modes()
            let v = detector.impulseDb(at: onset)
            features.impulseDb = v
            return v
        }
        mutating func repeats() -> Double {
            if let v = features.repetition { return v }
            let v = detector.repetition(at: onset)
            features.repetition = v
            return v
        }
        /// nil when it cannot be measured (nothing added above 2 kHz, too little heard before): no rule that asks for
        /// darkness then holds.
        mutating func dark() -> Double? {
            if darkAsked { return features.darkDb }
            features.darkDb = detector.darkDb()
            darkAsked = true
            return features.darkDb
        }
        /// Whether darkness was asked for (it may be asked and still be nil).
        var darkAsked = false
        mutating func measureAll() { _ = (ring(), quarter(), modes(), impulse(), repeats(), dark()) }
    }

    /// The vetoes asked of an event let in by its modes or as struck, in order.
    static let vetoesAfterModes: [Rule] = [.voice, .throughAWall]
    /// The vetoes asked of every other event let in, in order.
    static let vetoesAfterAdmission: [Rule] = [
        .hiss, .burstOfNoise, .slowAttack, .slowAttackForItsBreadth, .reflection, .throughAWall, .bouncingBall,
        .unstruck,
    ]

    /// Admission, then the vetoes: the whole decision of an event that rose sharply.
    func judge(_ e: Event, _ m: inout Measures) -> Decision {
        let s = settings
        var admission = Admission.decaysAndBroad
        if !(e.decays && e.wide) {
            // A club head rings: its modes make the tail periodic, where a clap, a bounce, a tap or a hiss is noise. A
            // ringing tail stands for the decay a long-ringing driver does not show in 10 ms, and — with a fast attack
            // and some energy above 4 kHz — for the breadth a mishit's low modes lack (RoomCorpus tuning seeds).
            let ringing = e.wide && m.ring() >= s.minModalityRinging
            // Less breadth asks for a stronger ring (a second tier, measured the same way). Several modes beat, so the
            // 8-sample energy of an abrupt onset may reach half its peak late: reaching a quarter of it at once counts.
            let narrowModal =
                e.decays
                && ((e.broadband4k >= s.minBroadband4kModal
                    && (e.attackSamples <= maxNarrowAttack || m.quarter() <= maxNarrowQuarterAttack)
                    && m.ring() >= s.minModalityNarrow)
                    || (e.broadband4k >= s.minBroadband4kStrongRing && e.attackSamples <= maxAttack - 4
                        && m.ring() >= s.minModalityStrongRing))
            // A strong ring from an abrupt onset is an impact even while a live room holds the level up for 10 ms.
            let undecayedRing =
                e.broadband4k >= s.minBroadband4kModal && m.quarter() <= maxRingQuarterAttack
                && m.ring() >= s.minModalityUndecayedRing
            if ringing {
                admission = .ringing
            } else if narrowModal {
                admission = .narrowModal
            } else if undecayedRing {
                admission = .undecayedRing
            } else {
                // Several modes ringing at once, from an abrupt onset well over the floor, is a struck head whatever
                // its breadth or its decay in a live room; a tap, a bounce, a clap or a thud's slap is noise through at
                // most one resonance. Or a struck object however narrow or slow to decay.
                let abrupt =
                    e.snrDb >= s.minModesSnrDb && e.attackSamples <= maxModesAttack
                    && m.quarter() <= maxModesQuarterAttack && !e.clipped
                if abrupt && m.modes() >= s.minModesDb {
                    admission = .severalModes
                } else if struck(e, &m) {
                    admission = .struck
                } else {
                    return .rejected(!e.decays ? .slowDecay : .narrowband)
                }
                for rule in Self.vetoesAfterModes where vetoes(rule, e, &m) { return .rejected(rule) }
                return .accepted(admission)
            }
        }
        for rule in Self.vetoesAfterAdmission where vetoes(rule, e, &m) { return .rejected(rule) }
        return .accepted(admission)
    }

    /// Whether `rule` refuses the event: each veto's test, written once.
    func vetoes(_ rule: Rule, _ e: Event, _ m: inout Measures) -> Bool {
        let s = settings
        switch rule {
        case .slowRise, .slowDecay, .narrowband:
            return false  // decided before any veto is asked (`decide`, `judge`)
        case .voice:
            // A voice's pulse rings several formants too, but repeats the pulse one voice period before it.
            return m.repeats() >= s.maxRepetitionModes
        case .reflection:
            // Whatever let it in: a sound that repeats what sounded one period before it is that sound again.
            return m.repeats() >= s.maxRepetition
        case .throughAWall:
            return throughAWall(e, &m)
        case .hiss:
            // Noise that ramps up and does not ring — a fricative, a breath — dips as noise does; that dip is no decay.
            return e.attackSamples >= minHissAttack && e.decayDb < s.minHissDecayDb
                && e.earlyDecayDb < s.minEarlyDecayDb + 2 && m.ring() < s.maxModalityHiss && !spared(e, &m)
        case .burstOfNoise:
            return e.attackSamples >= minHissAttack && e.broadband < s.minBroadbandBurst
                && m.ring() < s.maxModalityBurst && m.modes() < s.minModesDbBurst && !spared(e, &m)
        case .slowAttack:
            guard e.attackSamples > maxAttack else { return false }
            // Forgiven a tail that rings with some breadth (the onset was placed early), or a ring whose onset reaches a
            // quarter of its peak at once — beating modes, not a ramp.
            let ringsWide = m.ring() >= s.minModalityRinging && e.broadband4k >= s.minBroadband4k
            let beats = m.quarter() <= maxNarrowQuarterAttack && m.ring() >= s.minModalityNarrow
            return !(ringsWide || beats || spared(e, &m))
        case .slowAttackForItsBreadth:
            // Broad only above 4 kHz: a bounce or a tap can be that too; an impact then attacks at once or rings.
            guard e.broadband < s.minBroadband else { return false }
            return !(e.attackSamples <= max4kAttack || m.ring() >= s.minModality4k || spared(e, &m))
        case .bouncingBall:
            return e.endsABounceTrain
        case .unstruck:
            // Asked in this order: an impact usually rings, and the ring is then all that is measured.
            return
                !(e.snrDb >= s.unstruckSnrDb || e.decayDb >= s.minDecayDb || m.ring() >= s.unstruckModality
                || m.modes() >= s.unstruckModesDb || m.impulse() >= s.unstruckImpulseDb)
        }
    }

    /// The neighbouring bay's impact comes through a partition, which passes its low frequencies and stops its high
    /// ones (the mass law): dark, its crack smoothed away, little left above 6 kHz.
    func throughAWall(_ e: Event, _ m: inout Measures) -> Bool {
        (m.dark().map { $0 >= settings.minDarkDb } ?? false) && m.impulse() < settings.minImpulseDb
            && e.broadband < settings.minBroadband
    }

    /// A struck object: an impulse at the onset whose tail rings with some modes (or, not dark, one); or (rule 25) a
    /// weaker impulse from a louder, brighter sound that rings more strongly — a mishit. Never a clipped flat top.
    func struck(_ e: Event, _ m: inout Measures) -> Bool {
        let s = settings
        guard !e.clipped else { return false }
        if e.snrDb >= s.minStruckSnrDb
            && (m.modes() >= s.minModesDbStruck || (m.dark().map { $0 >= 0 && $0 < s.maxDarkDbOneMode } ?? false))
            && m.ring() >= s.minModalityStruck && m.impulse() >= s.minImpulseDb
        {
            return true
        }
        return e.snrDb >= s.minStruckLoudSnrDb && m.ring() >= s.minModalityStruckLoud
            && m.impulse() >= s.minImpulseDbLoud && (m.dark().map { $0 >= 0 && $0 < s.minDarkDb } ?? false)
    }

    /// What no veto refuses (rules 24 and 26): an impulse at the onset, or a struck object that does not repeat and did
    /// not come through a wall. Asked last, only of an event a veto would otherwise refuse: these measures cost most.
    func spared(_ e: Event, _ m: inout Measures) -> Bool {
        m.impulse() >= settings.minImpulseDb
            || (struck(e, &m) && m.repeats() < settings.maxRepetitionModes && !throughAWall(e, &m))
    }
}
