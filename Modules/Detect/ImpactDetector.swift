import Foundation

/// One detected club–ball impact candidate.
public struct Candidate: Sendable, Equatable {
    /// Sequential id within a detector run.
    public var id: UInt64
    /// Sample index of the onset at the microphone, counted from the stream's first sample.
    public var onsetSample: Int64
    /// The impact instant in samples: onset − time of flight (equal to the onset when no distance is declared).
    public var impactSample: Double
    /// Impact time, ns on the capture clock.
    public var t0Ns: Int64
    /// 0…1: how clearly this is an impact (SNR, sharpness, decay, broadband content combined).
    public var score: Double
    public var features: Features
    /// The time-of-flight correction applied, in samples, or nil when the session declared no distance.
    public var tofCorrectionSamples: Double?
    /// Where the distance came from ("declared in the manifest (assumed)"), or why there is none.
    public var tofProvenance: String
    /// Sample at which the detector decided (for latency: decided − onset).
    public var decidedAtSample: Int64

    public struct Features: Sendable, Equatable {
        /// Peak block energy over the noise floor, dB.
        public var snrDb: Double
        /// Blocks from the trigger to the energy peak.
        public var riseBlocks: Int
        /// How far the energy fell within the decay window, dB.
        public var decayDb: Double
        /// Energy above 6 kHz over energy above 2 kHz at the peak (0…1).
        public var broadband: Double
        /// Energy above 4 kHz over energy above 2 kHz at the peak (0…1): broadband content a comb filter (a hard floor
        /// near the ball) notches less than the 6 kHz share.
        public var broadband4k: Double = 0
        /// The trigger block over the mean of the four before it, dB.
        public var jumpDb: Double = 9
        /// How far the energy fell from the peak within 3 ms (before a room's early reflections come back), dB.
        public var earlyDecayDb: Double = 0
        /// The lowest block within 4 ms after the peak, under the peak, dB.
        public var dipDb: Double = 0
        /// Samples from the onset until the 8-sample energy first reaches half its peak (nil: not measured).
        public var attackSamples: Int?
        /// How periodic the tail is (see `ImpactDetector.modality()`; nil: not measured, the event was judged without it).
        public var modality: Double?
        /// The loudest block after the rise over the peak, dB (a live room's reflections; a swell).
        public var laterPeakDb: Double
        /// Samples from the onset until the 8-sample energy first reaches a quarter of its peak (nil: not measured).
        public var attackQuarterSamples: Int?
        /// How much more of the tail a 12th-order linear predictor takes than a 2nd-order one, dB: several modes ringing
        /// at once (a struck head) against noise through at most one resonance (see `ImpactDetector.modesDb()`; nil: not
        /// measured).
        public var modesDb: Double?
        /// How closely the onset repeats what sounded one voice period (3.3–12.5 ms) before it: the largest normalised
        /// correlation (see `ImpactDetector.repetition(at:)`; nil: not measured).
        public var repetition: Double?
        /// How impulsive the excitation is: the onset's residual (of the order-12 predictor `modesDb()` fits to the
        /// ring), its largest 6 samples over its median, dB (see `ImpactDetector.impulseDb(at:)`; nil: not measured).
        public var impulseDb: Double?
        /// How dark the event is: the energy it adds above 200 Hz against what it adds above 2 kHz, dB, in its
        /// first ~7 ms against the ~48 ms before it (see `ImpactDetector.darkDb()`; nil: not measured, or not
        /// measurable for this event).
        public var darkDb: Double?
    }
}

/// A streaming detector of club–ball impacts in mono audio: sharp, broadband, quickly decaying transients.
///
/// Per sample: causal biquad high-passes (2 kHz for the event, 4 and 6 kHz for how broadband it is, 200 Hz for how dark
/// it is), energy accumulated in blocks of ~0.67 ms, the 2 kHz output kept in a small history ring and each block's
/// energies in another. Per block: adaptive noise floors above 2 and 4 kHz; a trigger when the block rises `triggerDb`
/// above the 2 kHz floor and jumps over the blocks before it (or, too quiet for that, does both above 4 kHz); then,
/// 10 ms later, gates on rise (sharpness), decay and broadband content; the onset refined to a sample by an AIC
/// change-point picker on the high-passed history; a refractory period. Nothing is allocated after `init`. Durations
/// scale with the sample rate, so any rate works.
public final class ImpactDetector {
    /// What it listens for (ImpactDetectorSettings.swift); what it measures of an event is in EventMeasures.swift.
    public let settings: Settings
    let blockSize: Int
    let historyMask: Int
    var history: UnsafeMutablePointer<Float>
    // Biquad states (transposed direct form II).
    var hp2: Biquad
    var hp6: Biquad
    var hp4: Biquad
    /// Above 200 Hz: the whole band an impact sounds in, without hum, rumble or a thud's fundamental (for `darkDb()`).
    var hp200: Biquad
    // Block accumulation.
    var sample: Int64 = 0
    var blockEnergy: Double = 0
    var blockEnergyHF: Double = 0
    var blockEnergy4k: Double = 0
    /// The energy above 200 Hz, for how dark an event is.
    var blockEnergyAll: Double = 0
    var inBlock = 0
    /// Each block's mean energy above 200 Hz and above 2 kHz, the last `blockRingMask + 1` blocks, indexed by
    /// `blocksSeen` (for `darkDb()`; one store each per block).
    let blockRingAll: UnsafeMutablePointer<Double>
    let blockRing2k: UnsafeMutablePointer<Double>
    static let blockRingMask = 255
    /// `blocksSeen` at the open event's trigger block.
    var eventTriggerBlock = 0
    var floor: Double = 1e-9
    var warmUp: Double = 0
    var blocksSeen = 0
    /// Blocks (≈ 11 ms at 48 kHz) whose mean seeds the noise floor; no event opens before they are seen.
    static let warmUpBlocks = 16

    /// The fewest samples at `sampleRate` in which an impact can be judged at all: the warm-up that seeds the noise
    /// floor, and one block after it. Shorter audio is no audio to judge.
    public static func minimumSamples(sampleRate: Int) -> Int {
        let block = samples(32, at: Double(sampleRate), least: 8)
        return (warmUpBlocks + 1) * block
    }
    // An open event.
    var eventOpen = false
    var eventTriggerBlockStart: Int64 = 0
    var eventBlocks = 0
    var eventPeak: Double = 0
    var eventPeakHF: Double = 0
    var eventPeak4k: Double = 0
    var eventJump: Double = 0
    var eventDip: Double = 0
    var eventLateMax: Double = 0
    /// The last rejected event's peak, and until when a quieter event is taken for its echo.
    var rejectedPeak: Double = 0
    /// …and its share above 6 kHz: an echo sounds like what it echoes.
    var rejectedBroadband: Double = 0
    var rejectedUntil: Int64 = -1
    var eventPeakBlock = 0
    var eventLastEnergy: Double = 0
    var eventEarlyEnergy: Double = 0
    let earlyBlocks: Int
    var refractoryUntil: Int64 = -1
    var nextID: UInt64 = 1
    let decayBlocks: Int
    /// Blocks after the peak over which the dip is sought (about 4 ms).
    let dipBlocks: Int
    /// The slowest attack an impact has, samples (26 at 48 kHz), and a narrowband one (18).
    let maxAttack: Int
    let maxNarrowAttack: Int
    let max4kAttack: Int
    let maxNarrowQuarterAttack: Int
    let maxRingQuarterAttack: Int
    let minHissAttack: Int
    let maxModesAttack: Int
    let maxModesQuarterAttack: Int
    /// The stretch `modesDb()` predicts: from `modesOffset` samples after the onset (past the crack), `modesLength` long.
    let modesOffset: Int
    let modesLength: Int
    /// Scratch for `modesDb()`: the stretch, and the normal equations of the order-12 predictor.
    let modesWindow: UnsafeMutablePointer<Double>
    let modesMatrix: UnsafeMutablePointer<Double>
    /// The order-12 predictor `modesDb()` last fitted, and the onset it was fitted after (nil: none usable).
    let modesCoefficients: UnsafeMutablePointer<Double>
    var modesFittedAt: Int64?
    /// Scratch for `impulseDb(at:)`: the residual's energies, then its 6-sample sums.
    let impulseScratch: UnsafeMutablePointer<Double>
    /// `impulseDb(at:)`'s geometry: samples measured before the onset and from it, the spike's window, and how far
    /// before and after the onset that window may start.
    let impulseBefore: Int
    let impulseAfter: Int
    let impulseWindow: Int
    let impulseLead: Int
    let impulseLag: Int
    static let modesOrder = 12
    let refractorySamples: Int64
    let triggerRatio: Double
    let jumpRatio: Double
    let laterPeakRatio: Double
    let echoSamples: Int64
    let echoRatio: Double
    /// The last three decided events' trigger samples and peak energies (most recent last), whatever their verdicts, and
    /// the last one's share above 6 kHz: the bounce-train test.
    var pastEvents: ((Int64, Double), (Int64, Double), (Int64, Double)) = ((-1, 0), (-1, 0), (-1, 0))
    var pastBroadband: Double = 0
    let maxBounceInterval: Int64
    let bounceLevelRatio: Double
    /// The previous blocks' energies (most recent last), for the jump test.
    var recent: (Double, Double, Double, Double) = (0, 0, 0, 0)
    /// The same above 4 kHz, and that band's own floor (the second trigger).
    var recent4k: (Double, Double, Double, Double) = (0, 0, 0, 0)
    var floor4k: Double = 1e-9
    var warmUp4k: Double = 0
    /// Called once per decided event with its features and whether (and why not) it was accepted. Not on the per-sample
    /// path; nil in production.
    public var trace: ((_ triggerSample: Int64, _ features: Candidate.Features, _ decision: Decision) -> Void)?
    let tofSamples: Double?
    /// The capture-clock time of sample 0, ns.
    public var streamStartNs: Int64 = 0

    public init(_ settings: Settings) {
        precondition(settings.problem == nil, settings.problem ?? "")
        self.settings = settings
        let fs = Double(settings.sampleRate)
        blockSize = Self.samples(32, at: fs, least: 8)
        var h = 1
        while h < Int(fs * 0.08) { h <<= 1 }  // ≥ 80 ms of history
        historyMask = h - 1
        history = .allocate(capacity: h)
        history.initialize(repeating: 0, count: h)
        blockRingAll = .allocate(capacity: Self.blockRingMask + 1)
        blockRingAll.initialize(repeating: 0, count: Self.blockRingMask + 1)
        blockRing2k = .allocate(capacity: Self.blockRingMask + 1)
        blockRing2k.initialize(repeating: 0, count: Self.blockRingMask + 1)
        hp2 = Biquad(highPassAt: min(2000, fs * 0.2), sampleRate: fs)
        hp6 = Biquad(highPassAt: min(6000, fs * 0.4), sampleRate: fs)
        hp4 = Biquad(highPassAt: min(4000, fs * 0.3), sampleRate: fs)
        hp200 = Biquad(highPassAt: 200, sampleRate: fs)
        decayBlocks = max(2, Int((settings.decaySeconds * fs / Double(blockSize)).rounded()))
        earlyBlocks = max(1, Int((settings.earlyDecaySeconds * fs / Double(blockSize)).rounded()))
        dipBlocks = max(2, Int((0.004 * fs / Double(blockSize)).rounded()))
        maxAttack = Self.samples(settings.maxAttackSamples48k, at: fs, least: 4)
        maxNarrowAttack = Self.samples(settings.maxNarrowAttackSamples48k, at: fs, least: 3)
        max4kAttack = Self.samples(settings.max4kAttackSamples48k, at: fs, least: 2)
        maxNarrowQuarterAttack = Self.samples(settings.maxNarrowQuarterAttackSamples48k, at: fs, least: 2)
        maxRingQuarterAttack = Self.samples(settings.maxRingQuarterAttackSamples48k, at: fs, least: 2)
        minHissAttack = Self.samples(settings.minHissAttackSamples48k, at: fs, least: 2)
        maxModesAttack = Self.samples(settings.maxModesAttackSamples48k, at: fs, least: 2)
        maxModesQuarterAttack = Self.samples(settings.maxModesQuarterAttackSamples48k, at: fs, least: 1)
        modesOffset = Self.samples(6, at: fs, least: 1)
        modesLength = Self.samples(192, at: fs, least: 4 * Self.modesOrder)
        modesWindow = .allocate(capacity: modesLength)
        modesMatrix = .allocate(capacity: Self.modesOrder * (Self.modesOrder + 1))
        modesCoefficients = .allocate(capacity: Self.modesOrder)
        impulseBefore = Self.samples(48, at: fs, least: 8)
        impulseAfter = modesOffset + modesLength
        impulseWindow = Self.samples(6, at: fs, least: 2)
        impulseLead = Self.samples(8, at: fs, least: 1)
        impulseLag = Self.samples(15, at: fs, least: 2)
        impulseScratch = .allocate(capacity: impulseBefore + impulseAfter)
        refractorySamples = Int64(settings.refractorySeconds * fs)
        triggerRatio = pow(10, settings.triggerDb / 10)
        jumpRatio = pow(10, settings.jumpDb / 10)
        laterPeakRatio = pow(10, settings.laterPeakToleranceDb / 10)
        echoSamples = Int64(settings.echoSeconds * fs)
        echoRatio = pow(10, settings.echoToleranceDb / 10)
        maxBounceInterval = Int64(settings.maxBounceIntervalSeconds * fs)
        bounceLevelRatio = pow(10, settings.bounceLevelToleranceDb / 10)
        tofSamples = settings.micToBallMetres.map { $0 / settings.speedOfSoundMps * fs }
    }

    /// `count` samples at 48 kHz, at `sampleRate` (rounded), and never under `least`.
    static func samples(_ count: Int, at sampleRate: Double, least: Int) -> Int {
        max(least, Int((Double(count) * sampleRate / 48_000).rounded()))
    }

    deinit {
        history.deallocate()
        blockRingAll.deallocate()
        blockRing2k.deallocate()
        modesWindow.deallocate()
        modesMatrix.deallocate()
        modesCoefficients.deallocate()
        impulseScratch.deallocate()
    }

    /// Feeds a whole recording in blocks of `blockSamples`, as a live source would, and returns every candidate.
    public func detect(in samples: [Float], blockSamples: Int = 512) -> [Candidate] {
        var found: [Candidate] = []
        samples.withUnsafeBufferPointer { all in
            var i = 0
            while i < all.count {
                let n = min(blockSamples, all.count - i)
                process(UnsafeBufferPointer(rebasing: all[i..<(i + n)])) { found.append($0) }
                i += n
            }
        }
        return found
    }

    /// Feeds samples; calls `emit` for each candidate as soon as it is decided (about 10 ms after the onset).
    @inline(__always)
    public func process(_ samples: UnsafeBufferPointer<Float>, emit: (Candidate) -> Void) {
        for x in samples {
            let y = hp2.step(x)
            let z = hp6.step(y)
            let q = hp4.step(y)
            history[Int(sample) & historyMask] = y
            blockEnergy += Double(y * y)
            blockEnergyHF += Double(z * z)
            blockEnergy4k += Double(q * q)
            let w = hp200.step(x)
            blockEnergyAll += Double(w * w)
            sample += 1
            inBlock += 1
            if inBlock == blockSize {
                endBlock(emit: emit)
                inBlock = 0
                blockEnergy = 0
                blockEnergyHF = 0
                blockEnergy4k = 0
                blockEnergyAll = 0
            }
        }
    }

    /// `count` samples the stream lost (an xrun): sample numbering jumps past them, so later onsets stay on the
    /// device's sample clock. An event open across the gap is dropped undecided (half of it was never heard), the
    /// filters and the onset history start again from silence, and no event opens within one block of the resume
    /// (the restart itself is not a transient); the noise floor is kept.
    public func skip(_ count: Int64) {
        guard count > 0 else { return }
        sample += count
        eventOpen = false
        inBlock = 0
        blockEnergy = 0
        blockEnergyHF = 0
        blockEnergy4k = 0
        blockEnergyAll = 0
        blockRingAll.update(repeating: 0, count: Self.blockRingMask + 1)
        blockRing2k.update(repeating: 0, count: Self.blockRingMask + 1)
        hp2.z1 = 0
        hp2.z2 = 0
        hp6.z1 = 0
        hp6.z2 = 0
        hp4.z1 = 0
        hp4.z2 = 0
        hp200.z1 = 0
        hp200.z2 = 0
        history.update(repeating: 0, count: historyMask + 1)
        recent = (floor, floor, floor, floor)
        recent4k = (floor4k, floor4k, floor4k, floor4k)
        refractoryUntil = max(refractoryUntil, sample + Int64(blockSize))
    }

    func endBlock(emit: (Candidate) -> Void) {
        let e = blockEnergy / Double(blockSize)
        let hf = blockEnergyHF / Double(blockSize)
        let q4 = blockEnergy4k / Double(blockSize)
        blocksSeen += 1
        blockRingAll[blocksSeen & Self.blockRingMask] = blockEnergyAll / Double(blockSize)
        blockRing2k[blocksSeen & Self.blockRingMask] = e
        if eventOpen {
            eventBlocks += 1
            // A new jump well above everything in the open event (an impact while someone talks) restarts the event
            // there, rather than being swallowed as that event's late peak.
            let before = max(recent.0, recent.1, recent.2, recent.3)
            recent = (recent.1, recent.2, recent.3, e)
            recent4k = (recent4k.1, recent4k.2, recent4k.3, q4)  // so the 4 kHz trigger never jumps over stale blocks
            if e > eventPeak * jumpRatio && e > before * jumpRatio {
                eventTriggerBlockStart = sample - Int64(blockSize)
                eventTriggerBlock = blocksSeen
                eventBlocks = 0
                eventPeak = e
                eventPeakHF = hf
                eventPeak4k = q4
                eventPeakBlock = 0
                eventLastEnergy = e
                eventJump = e / max((recent.0 + recent.1 + recent.2 + e) / 4, 1e-20)
                eventDip = e
                eventLateMax = 0
                return
            }
            if eventBlocks == eventPeakBlock + earlyBlocks { eventEarlyEnergy = e }
            if e > eventPeak, eventBlocks <= settings.maxRiseBlocks {
                eventPeak = e
                eventPeakHF = hf
                eventPeak4k = q4
                eventPeakBlock = eventBlocks
                eventDip = e
            } else {
                // After the rise the peak stays: a live room's early reflections may sum louder than the direct sound,
                // which is still where the impact is; only a much louder later block (a swell) makes it not sharp.
                if eventBlocks > settings.maxRiseBlocks { eventLateMax = max(eventLateMax, e) }
                if eventBlocks <= eventPeakBlock + dipBlocks { eventDip = min(eventDip, e) }
            }
            eventLastEnergy = e
            if eventBlocks >= eventPeakBlock + decayBlocks { decide(emit: emit) }
            return
        }
        let blockStart = sample - Int64(blockSize)
        let before4 = recent.0 + recent.1 + recent.2 + recent.3
        let jumped = Self.jumps(e, over: recent, by: jumpRatio)
        recent = (recent.1, recent.2, recent.3, e)
        // A quiet impact under a room's low-frequency noise (a fan, a rumble) may stand over it only above 4 kHz, where
        // the noise is weaker and the crack is not: a block that cannot trigger above 2 kHz for its level may trigger
        // above 4 kHz, against that band's own floor and blocks (RoomCorpus tuning sessions 1–32, ImpactCorpus seeds
        // 1–12 and five unseen ImpactCorpus seed sets, 2026-12-01). Not for a block loud above 2 kHz that did not jump
        // there: that is inside a louder sound's tail, where the 4 kHz band jumps at every brighter reflection.
        let jumped4k =
            settings.triggerAbove4k && e <= floor * triggerRatio && q4 > floor4k * triggerRatio
            && Self.jumps(q4, over: recent4k, by: jumpRatio)
        recent4k = (recent4k.1, recent4k.2, recent4k.3, q4)
        // The room's echo of a sound just rejected is that sound again, not a new event, unless it is louder or brighter.
        let echo =
            blockStart < rejectedUntil && e <= rejectedPeak * echoRatio
            && hf <= e * (rejectedBroadband + settings.echoBroadbandTolerance)
        if (e > floor * triggerRatio && jumped) || jumped4k, !echo, blockStart >= refractoryUntil,
            blocksSeen > Self.warmUpBlocks
        {
            eventOpen = true
            eventTriggerBlockStart = blockStart
            eventTriggerBlock = blocksSeen
            eventBlocks = 0
            eventPeak = e
            eventPeakHF = hf
            eventPeak4k = q4
            eventPeakBlock = 0
            eventJump = e / max((before4 + 1e-30) / 4, 1e-20)
            eventDip = e
            eventLateMax = 0
            return
        }
        let alphaUp = Double(blockSize) / (Double(settings.sampleRate) * 1.0)
        Self.follow(&floor, warmUp: &warmUp, e, blocksSeen: blocksSeen, alphaUp: alphaUp, triggerRatio: triggerRatio)
        Self.follow(
            &floor4k, warmUp: &warmUp4k, q4, blocksSeen: blocksSeen, alphaUp: alphaUp, triggerRatio: triggerRatio)
    }

    /// Whether block energy `e` jumps by `ratio` over the four blocks before it. An onset late in a block puts part of
    /// the rise in that block, and the next one then jumps less over it: a jump over two blocks (the previous one itself
    /// already rising) counts too. (Measured on unseen corpus seeds: quiet clean impacts were missed for want of this.)
    /// The onset search starts four blocks before the trigger, so the previous block is inside it.
    @inline(__always)
    static func jumps(_ e: Double, over recent: (Double, Double, Double, Double), by ratio: Double) -> Bool {
        let older = max(recent.0, recent.1, recent.2)
        return e > max(older, recent.3) * ratio || (e > older * ratio && recent.3 > older * 2)
    }

    /// Follows a band's noise floor with block energy `e` (a block that opened no event): the mean of the first blocks,
    /// then quiet blocks quickly downwards and slowly upwards (`alphaUp`: about 1 s), and loud blocks (a fan, a room
    /// getting louder) more slowly still.
    @inline(__always)
    static func follow(
        _ floor: inout Double, warmUp: inout Double, _ e: Double, blocksSeen: Int, alphaUp: Double, triggerRatio: Double
    ) {
        if blocksSeen <= warmUpBlocks {
            warmUp += e
            floor = warmUp / Double(blocksSeen)
        } else if e < floor {
            floor += (e - floor) * min(1, alphaUp * 8)
        } else if e < floor * triggerRatio {
            floor += (e - floor) * alphaUp
        } else {
            floor += (e - floor) * alphaUp / 8
        }
        floor = max(floor, 1e-14)
    }

    func decide(emit: (Candidate) -> Void) {
        eventOpen = false
        let snrDb = 10 * log10(eventPeak / floor)
        let decayDb = 10 * log10(eventPeak / max(eventLastEnergy, 1e-20))
        let broadband = eventPeakHF / max(eventPeak, 1e-20)
        let sharp = eventPeakBlock <= settings.maxRiseBlocks && eventLateMax <= eventPeak * laterPeakRatio
        // Decayed: fell by minDecayDb, or (a quiet impact with less headroom than that) back to within 3 dB of the floor.
        let earlyDecayDb = 10 * log10(eventPeak / max(eventEarlyEnergy, 1e-20))
        let broadband4k = eventPeak4k / max(eventPeak, 1e-20)
        let dipDb = 10 * log10(eventPeak / max(eventDip, 1e-20))
        let decays =
            decayDb >= settings.minDecayDb || eventLastEnergy <= floor * 2
            || (earlyDecayDb >= settings.minEarlyDecayDb && broadband >= 2 * settings.minBroadband)
            || (earlyDecayDb >= settings.minEarlyDecayDb4k && broadband4k >= 1.5 * settings.minBroadband4k)
            || dipDb >= settings.minDipDb
        let wide = broadband >= settings.minBroadband || broadband4k >= settings.minBroadband4k
        // Even a rejected event starts the refractory period: its tail must not retrigger; nor may its echoes for a while.
        refractoryUntil = sample
        let bounce = endsABounceTrain(broadband: broadband)
        pastEvents = (pastEvents.1, pastEvents.2, (eventTriggerBlockStart, eventPeak))
        pastBroadband = broadband
        rejectedPeak = eventPeak
        rejectedBroadband = broadband
        rejectedUntil = sample + echoSamples
        var features = Candidate.Features(
            snrDb: snrDb, riseBlocks: eventPeakBlock, decayDb: decayDb, broadband: broadband,
            broadband4k: broadband4k, jumpDb: 10 * log10(max(eventJump, 1e-20)), earlyDecayDb: earlyDecayDb,
            dipDb: dipDb, laterPeakDb: 10 * log10(max(eventLateMax, 1e-30) / max(eventPeak, 1e-20)))
        guard sharp else {
            // for a person reading the trace
            if trace != nil { features.attackSamples = attackSamples(from: refineOnset()) }
            trace?(eventTriggerBlockStart, features, .rejected(.slowRise))
            return
        }
        let onset = refineOnset()
        // The attack at the sample: samples from the onset until the 8-sample energy first reaches half its peak in the
        // next 128. A struck ball gets there within a few samples; a bounce on the mat, a tap or a clap ramps up.
        let attack = attackSamples(from: onset)
        features.attackSamples = attack
        var measures = Measures(detector: self, onset: onset, features: features)
        if trace != nil { measures.measureAll() }  // for a person reading the trace
        // A level that falls far under the room's own noise is a flat top — a clipped converter, whose corners ring the
        // high-pass as predictably as a head rings — not a sound.
        let event = Event(
            snrDb: snrDb, decayDb: decayDb, earlyDecayDb: earlyDecayDb, dipDb: dipDb, broadband: broadband,
            broadband4k: broadband4k, attackSamples: attack, decays: decays, wide: wide, clipped: dipDb > snrDb + 10,
            endsABounceTrain: bounce)
        let decision = judge(event, &measures)
        trace?(eventTriggerBlockStart, measures.features, decision)
        if case .accepted = decision { accept(measures.features, onset: onset, emit: emit) }
    }

    /// Whether the event being decided ends a bouncing ball's train with the three decided before it (`Settings`:
    /// `bounceRatios`): intervals shrinking by a steady ratio, no event much louder than the one before, and this one
    /// sounding like the last — no brighter than it by more than `echoBroadbandTolerance` above 6 kHz (a ball struck
    /// just then, in time with a bounce, is a crack, not another soft contact).
    func endsABounceTrain(broadband: Double) -> Bool {
        guard settings.bounceRatioTolerance >= 0, broadband <= pastBroadband + settings.echoBroadbandTolerance else {
            return false
        }
        let (a, b, c) = pastEvents
        let t = (a.0, b.0, c.0, eventTriggerBlockStart)
        guard t.0 >= 0 else { return false }
        let d = (Double(t.1 - t.0), Double(t.2 - t.1), Double(t.3 - t.2))
        guard d.0 > 0, d.1 > 0, d.2 > 0, t.3 - t.2 <= maxBounceInterval, t.2 - t.1 <= maxBounceInterval,
            t.1 - t.0 <= maxBounceInterval
        else { return false }
        let r1 = d.1 / d.0
        let r2 = d.2 / d.1
        guard settings.bounceRatios.contains(r1), settings.bounceRatios.contains(r2),
            abs(r2 - r1) <= settings.bounceRatioTolerance
        else { return false }
        return b.1 <= a.1 * bounceLevelRatio && c.1 <= b.1 * bounceLevelRatio && eventPeak <= c.1 * bounceLevelRatio
    }

    /// Emits `features`' event as a candidate at `onset`, and starts the refractory period.
    func accept(_ features: Candidate.Features, onset: Int64, emit: (Candidate) -> Void) {
        refractoryUntil = onset + refractorySamples
        let score =
            min(1, max(0, (features.snrDb - settings.triggerDb) / 30)) * 0.4
            + min(1, (features.decayDb - settings.minDecayDb) / 20 + 0.5) * 0.2
            + min(1, features.broadband / 0.8) * 0.2 + (features.riseBlocks <= 1 ? 0.2 : 0.1)
        guard score >= settings.minScore else { return }
        let tof = tofSamples
        let impact = Double(onset) - (tof ?? 0)
        let t0 = streamStartNs + Int64((impact / Double(settings.sampleRate) * 1e9).rounded())
        emit(
            Candidate(
                id: nextID, onsetSample: onset, impactSample: impact, t0Ns: t0, score: score,
                features: features,
                tofCorrectionSamples: tof,
                tofProvenance: tof == nil
                    ? "no tof_correction: the session declared no mic-to-ball distance" : settings.distanceProvenance,
                decidedAtSample: sample))
        nextID += 1
    }
}

/// A second-order IIR section (transposed direct form II), Butterworth high-pass.
struct Biquad {
    var b0, b1, b2, a1, a2: Float
    var z1: Float = 0
    var z2: Float = 0

    init(highPassAt fc: Double, sampleRate fs: Double) {
        let w = 2 * Double.pi * fc / fs
        let q = 1 / 2.0.squareRoot()
        let alpha = sin(w) / (2 * q)
        let cw = cos(w)
        let a0 = 1 + alpha
        b0 = Float((1 + cw) / 2 / a0)
        b1 = Float(-(1 + cw) / a0)
        b2 = Float((1 + cw) / 2 / a0)
        a1 = Float(-2 * cw / a0)
        a2 = Float((1 - alpha) / a0)
    }

    @inline(__always)
    mutating func step(_ x: Float) -> Float {
        let y = b0 * x + z1
        z1 = b1 * x - a1 * y + z2
        z2 = b2 * x - a2 * y
        return y
    }
}
