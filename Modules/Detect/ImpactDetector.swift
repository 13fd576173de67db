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
        /// Samples from the onset until the 8-sample energy first reaches half its peak (-1: not measured).
        public var attackSamples: Int = -1
        /// How periodic the tail is (see `ImpactDetector.modality()`; -1: not measured, the event was judged without it).
        public var modality: Double = -1
        /// The loudest block after the rise over the peak, dB (a live room's reflections; a swell).
        public var laterPeakDb: Double = -99
        /// Samples from the onset until the 8-sample energy first reaches a quarter / a tenth of its peak (-1: not measured).
        public var attackQuarterSamples: Int = -1
        public var attackTenthSamples: Int = -1
        /// How much more of the tail a 12th-order linear predictor takes than a 2nd-order one, dB: several modes ringing
        /// at once (a struck head) against noise through at most one resonance (see `ImpactDetector.modesDb()`; -99: not
        /// measured).
        public var modesDb: Double = -99
        /// How closely the onset repeats what sounded one voice period (3.3–12.5 ms) before it: the largest normalised
        /// correlation (see `ImpactDetector.repetition(at:)`; -1: not measured).
        public var repetition: Double = -1
    }
}

/// A streaming detector of club–ball impacts in mono audio: sharp, broadband, quickly decaying transients.
///
/// Per sample: two causal biquad high-passes (2 kHz for the event, 6 kHz for how broadband it is), energy accumulated
/// in blocks of ~0.67 ms, the 2 kHz output kept in a small history ring. Per block: an adaptive noise floor; a trigger
/// when the block rises `triggerDb` above it; then, 10 ms later, gates on rise (sharpness), decay and broadband
/// content; the onset refined to a sample by an AIC change-point picker on the high-passed history; a refractory
/// period. Nothing is allocated after `init`. Durations scale with the sample rate, so any rate works.
public final class ImpactDetector {
    public struct Settings: Sendable, Equatable {
        public var sampleRate: Int
        /// Block energy above the noise floor that opens an event, dB.
        public var triggerDb: Double = 10
        /// …and above the loudest of the previous four blocks, dB: an impact jumps; a whoosh, a voice or a fade swells.
        public var jumpDb: Double = 9
        /// Most blocks from trigger to peak for an impact (sharpness gate)…
        public var maxRiseBlocks: Int = 2
        /// …and no later block louder than that peak by more than this, dB (a live room's early reflections may sum a
        /// few dB over the direct sound; a swell grows far more). RoomCorpus tuning seeds, 2026-12-01.
        public var laterPeakToleranceDb: Double = 6
        /// For this long after an event is rejected, an event no louder than it (within `echoToleranceDb`) is its
        /// echo from the room's walls and is not weighed (RoomCorpus tuning seeds, 2026-12-01: a rejected direct sound's
        /// wall reflection 10–18 ms later was being taken for the impact).
        public var echoSeconds: Double = 0.04
        /// …and no louder than it by more than this, dB: a reflection is quieter than the sound it reflects (6, the later-peak
        /// tolerance, until rule 15: a bounce 6–26 ms before an impact hid it; RoomCorpus tuning sessions 1–32).
        public var echoToleranceDb: Double = 0
        /// …and sounding like it: its share above 6 kHz at most this much over the rejected sound's (a speech pulse's
        /// echo is as narrowband as the pulse; an impact after it is not). ImpactCorpus seeds 1000–1005 and RoomCorpus
        /// tuning sessions 1–32, 2026-12-01.
        public var echoBroadbandTolerance: Double = 0.2
        /// Least fall of energy from the peak within `decaySeconds`, dB (decay gate).
        public var minDecayDb: Double = 15
        public var decaySeconds: Double = 0.010
        /// In a reverberant room the tail keeps the 10 ms decay short of `minDecayDb`; the direct sound of an impact still
        /// falls this far within `earlyDecaySeconds`, which a clap (slow, narrowband) does not.
        public var minEarlyDecayDb: Double = 6
        public var earlyDecaySeconds: Double = 0.003
        /// Walking back from the AIC pick through a ramped rise: continue while the 3-sample energy exceeds the
        /// pre-event noise by this factor.
        public var onsetWalkbackRatio: Double = 4
        /// Refine the walked-back onset with a ramp model (see `rampOnset`).
        public var rampRefinement = true
        /// How far before the walked-back onset the ramp model may place it, samples. 2, measured 2026-11-30 on nine
        /// corpus seeds against 0 (no refinement), 3, 4, 5, 8 and 16: wider searches trade the late tail for an early one.
        public var rampSearchSamples = 2
        /// The longest rise the ramp model considers, samples.
        public var rampMaxSamples = 32
        /// Least share of energy above 6 kHz in energy above 2 kHz at the peak (broadband gate)…
        public var minBroadband: Double = 0.2
        /// …or above 4 kHz (a hard floor near the ball notches the 6 kHz share by comb filtering; measured on
        /// RoomCorpus tuning seeds, 2026-12-01).
        public var minBroadband4k: Double = 0.3
        /// Decayed also when the energy dips this far within 4 ms of the peak: the direct sound fell before a live room's
        /// early reflections built the level up again (RoomCorpus tuning seeds, 2026-12-01).
        public var minDipDb: Double = 6
        /// …or falls this far within `earlyDecaySeconds` while clearly broadband above 4 kHz (≥ 1.5 × `minBroadband4k`).
        public var minEarlyDecayDb4k: Double = 3
        /// The slowest attack (onset to half the peak's 8-sample energy) an impact has, in samples at 48 kHz.
        public var maxAttackSamples48k = 26
        /// A broadband event that does not decay is still an impact when its tail rings this periodically…
        public var minModalityRinging = 0.55
        /// …and a narrowband one that decays, when its tail rings this periodically, it has this much above 4 kHz and its
        /// attack is at most `maxNarrowAttackSamples48k`.
        public var minModalityNarrow = 0.5
        public var minBroadband4kModal = 0.18
        public var maxNarrowAttackSamples48k = 18
        /// …or, ringing at least this strongly, with this much above 4 kHz and an attack of at most 22 samples at 48 kHz.
        public var minModalityStrongRing = 0.65
        public var minBroadband4kStrongRing = 0.12
        /// An event broad only above 4 kHz (under `minBroadband` above 6) attacks within this many samples at 48 kHz
        /// (10, then 6: both measured on the tuning seeds, then held out)…
        public var max4kAttackSamples48k = 6
        /// …or rings at least this periodically.
        public var minModality4k = 0.45
        /// A narrowband ringing event's attack may instead be judged at a quarter of the peak: several modes beat, so the
        /// 8-sample energy may reach half its peak late although the onset is abrupt (at most this many samples at 48 kHz).
        public var maxNarrowQuarterAttackSamples48k = 5
        /// A ring this strong, reaching a quarter of its peak within `maxRingQuarterAttackSamples48k` with
        /// `minBroadband4kModal` above 4 kHz, is an impact even while a live room keeps its level up for 10 ms.
        public var minModalityUndecayedRing = 0.75
        public var maxRingQuarterAttackSamples48k = 4
        /// A sound that does not ring (under this modality) and ramps up (attack of at least `minHissAttackSamples48k`)
        /// is a hiss — a fricative, a breath — unless it falls `minHissDecayDb` in 10 ms or `minEarlyDecayDb` + 2 in 3 ms:
        /// a dip in noise is no decay.
        public var maxModalityHiss = 0.35
        public var minHissAttackSamples48k = 6
        public var minHissDecayDb: Double = 12
        /// A narrowband or slowly decaying event is an impact when several modes ring in it: a 12th-order linear predictor
        /// takes at least this much more of its first 4 ms than a 2nd-order one (`modesDb()`), it stands at least
        /// `minModesSnrDb` over the floor, and its onset is abrupt: half the peak within `maxModesAttackSamples48k`, a
        /// quarter within `maxModesQuarterAttackSamples48k` (a voice's formants ring too, but its pulses build up over
        /// 10–17 samples). RoomCorpus tuning sessions 1–32 and ImpactCorpus seeds 1–12, 2026-12-01.
        public var minModesDb: Double = 4
        public var minModesSnrDb: Double = 15
        public var maxModesAttackSamples48k = 22
        public var maxModesQuarterAttackSamples48k = 8
        /// …and it does not repeat what sounded one voice period before it (`repetition(at:)` under this): a voice's glottal
        /// pulses ring several formants too (ImpactCorpus seeds 200, 500 and 3100 hard, 2026-12-01).
        public var maxRepetitionModes = 0.7
        /// A sound that ramps up (attack ≥ `minHissAttackSamples48k`) with less than this share above 6 kHz, rings less than
        /// `maxModalityBurst` and holds less than `minModesDbBurst` of several modes is a burst of noise: a bounce, a tap.
        public var minBroadbandBurst: Double = 0.3
        public var maxModalityBurst = 0.5
        public var minModesDbBurst: Double = 1.5
        /// No second candidate within this time of one, s.
        public var refractorySeconds: Double = 0.25
        /// Candidates below this score are not reported.
        public var minScore: Double = 0.0
        /// Mic-to-ball distance if the session declares one (m); nil: no time-of-flight correction.
        public var micToBallMetres: Double?
        public var speedOfSoundMps: Double = 343.42
        /// Where the distance came from, for the candidate's provenance.
        public var distanceProvenance: String = "declared in the manifest (assumed)"

        public init(sampleRate: Int) { self.sampleRate = sampleRate }

        /// The lowest rate the detector accepts: its broadband gate needs energy well above 6 kHz.
        public static let minimumSampleRate = 32_000

        /// Why these settings cannot be used, if they cannot.
        public var problem: String? {
            sampleRate < Self.minimumSampleRate
                ? "sample rate \(sampleRate) Hz: impact detection needs at least \(Self.minimumSampleRate) Hz (it tells an impact by its energy above 6 kHz)"
                : nil
        }
    }

    public let settings: Settings
    let blockSize: Int
    let historyMask: Int
    var history: UnsafeMutablePointer<Float>
    // Biquad states (transposed direct form II).
    var hp2: Biquad
    var hp6: Biquad
    var hp4: Biquad
    // Block accumulation.
    var sample: Int64 = 0
    var blockEnergy: Double = 0
    var blockEnergyHF: Double = 0
    var blockEnergy4k: Double = 0
    var inBlock = 0
    var floor: Double = 1e-9
    var warmUp: Double = 0
    var blocksSeen = 0
    /// Blocks (≈ 11 ms at 48 kHz) whose mean seeds the noise floor; no event opens before they are seen.
    static let warmUpBlocks = 16

    /// The fewest samples at `sampleRate` in which an impact can be judged at all: the warm-up that seeds the noise
    /// floor, and one block after it. Shorter audio is no audio to judge.
    public static func minimumSamples(sampleRate: Int) -> Int {
        let block = max(8, Int((Double(sampleRate) * 32 / 48_000).rounded()))
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
    static let modesOrder = 12
    let refractorySamples: Int64
    let triggerRatio: Double
    let jumpRatio: Double
    let laterPeakRatio: Double
    let echoSamples: Int64
    let echoRatio: Double
    /// The previous blocks' energies (most recent last), for the jump test.
    var recent: (Double, Double, Double, Double) = (0, 0, 0, 0)
    /// Called once per decided event with its features and whether (and why not) it was accepted. Not on the per-sample
    /// path; nil in production.
    public var trace: ((_ triggerSample: Int64, _ features: Candidate.Features, _ rejected: String?) -> Void)?
    let tofSamples: Double?
    /// The capture-clock time of sample 0, ns.
    public var streamStartNs: Int64 = 0

    public init(_ settings: Settings) {
        precondition(settings.problem == nil, settings.problem ?? "")
        self.settings = settings
        let fs = Double(settings.sampleRate)
        blockSize = max(8, Int((fs * 32 / 48_000).rounded()))
        var h = 1
        while h < Int(fs * 0.08) { h <<= 1 }  // ≥ 80 ms of history
        historyMask = h - 1
        history = .allocate(capacity: h)
        history.initialize(repeating: 0, count: h)
        hp2 = Biquad(highPassAt: min(2000, fs * 0.2), sampleRate: fs)
        hp6 = Biquad(highPassAt: min(6000, fs * 0.4), sampleRate: fs)
        hp4 = Biquad(highPassAt: min(4000, fs * 0.3), sampleRate: fs)
        decayBlocks = max(2, Int((settings.decaySeconds * fs / Double(blockSize)).rounded()))
        earlyBlocks = max(1, Int((settings.earlyDecaySeconds * fs / Double(blockSize)).rounded()))
        dipBlocks = max(2, Int((0.004 * fs / Double(blockSize)).rounded()))
        maxAttack = max(4, Int((Double(settings.maxAttackSamples48k) * fs / 48_000).rounded()))
        maxNarrowAttack = max(3, Int((Double(settings.maxNarrowAttackSamples48k) * fs / 48_000).rounded()))
        max4kAttack = max(2, Int((Double(settings.max4kAttackSamples48k) * fs / 48_000).rounded()))
        maxNarrowQuarterAttack = max(2, Int((Double(settings.maxNarrowQuarterAttackSamples48k) * fs / 48_000).rounded()))
        maxRingQuarterAttack = max(2, Int((Double(settings.maxRingQuarterAttackSamples48k) * fs / 48_000).rounded()))
        minHissAttack = max(2, Int((Double(settings.minHissAttackSamples48k) * fs / 48_000).rounded()))
        maxModesAttack = max(2, Int((Double(settings.maxModesAttackSamples48k) * fs / 48_000).rounded()))
        maxModesQuarterAttack = max(1, Int((Double(settings.maxModesQuarterAttackSamples48k) * fs / 48_000).rounded()))
        modesOffset = max(1, Int((6 * fs / 48_000).rounded()))
        modesLength = max(4 * Self.modesOrder, Int((192 * fs / 48_000).rounded()))
        modesWindow = .allocate(capacity: modesLength)
        modesMatrix = .allocate(capacity: Self.modesOrder * (Self.modesOrder + 1))
        refractorySamples = Int64(settings.refractorySeconds * fs)
        triggerRatio = pow(10, settings.triggerDb / 10)
        jumpRatio = pow(10, settings.jumpDb / 10)
        laterPeakRatio = pow(10, settings.laterPeakToleranceDb / 10)
        echoSamples = Int64(settings.echoSeconds * fs)
        echoRatio = pow(10, settings.echoToleranceDb / 10)
        tofSamples = settings.micToBallMetres.map { $0 / settings.speedOfSoundMps * fs }
    }

    deinit {
        history.deallocate()
        modesWindow.deallocate()
        modesMatrix.deallocate()
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
            sample += 1
            inBlock += 1
            if inBlock == blockSize {
                endBlock(emit: emit)
                inBlock = 0
                blockEnergy = 0
                blockEnergyHF = 0
                blockEnergy4k = 0
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
        hp2.z1 = 0; hp2.z2 = 0
        hp6.z1 = 0; hp6.z2 = 0
        hp4.z1 = 0; hp4.z2 = 0
        history.update(repeating: 0, count: historyMask + 1)
        recent = (floor, floor, floor, floor)
        refractoryUntil = max(refractoryUntil, sample + Int64(blockSize))
    }

    func endBlock(emit: (Candidate) -> Void) {
        let e = blockEnergy / Double(blockSize)
        let hf = blockEnergyHF / Double(blockSize)
        let q4 = blockEnergy4k / Double(blockSize)
        blocksSeen += 1
        if eventOpen {
            eventBlocks += 1
            // A new jump well above everything in the open event (an impact while someone talks) restarts the event
            // there, rather than being swallowed as that event's late peak.
            let before = max(recent.0, recent.1, recent.2, recent.3)
            recent = (recent.1, recent.2, recent.3, e)
            if e > eventPeak * jumpRatio && e > before * jumpRatio {
                eventTriggerBlockStart = sample - Int64(blockSize)
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
        let before = max(recent.0, recent.1, recent.2, recent.3)
        // An onset late in a block puts part of the rise in that block, and the next one then jumps less over it: a
        // jump over two blocks (the previous one itself already rising) counts too. (Measured on unseen corpus seeds:
        // quiet clean impacts were missed for want of this.) The onset search starts four blocks before the trigger,
        // so the previous block is inside it.
        let older = max(recent.0, recent.1, recent.2)
        let before4 = recent.0 + recent.1 + recent.2 + recent.3
        let jumped = e > before * jumpRatio || (e > older * jumpRatio && recent.3 > older * 2)
        recent = (recent.1, recent.2, recent.3, e)
        // The room's echo of a sound just rejected is that sound again, not a new event, unless it is louder or brighter.
        let echo = blockStart < rejectedUntil && e <= rejectedPeak * echoRatio
            && hf <= e * (rejectedBroadband + settings.echoBroadbandTolerance)
        if e > floor * triggerRatio, jumped, !echo, blockStart >= refractoryUntil, blocksSeen > Self.warmUpBlocks {
            eventOpen = true
            eventTriggerBlockStart = blockStart
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
        // The floor: the mean of the first blocks, then following quiet blocks quickly downwards and slowly upwards
        // (about 1 s), and loud blocks that opened no event (a fan, a room getting louder) more slowly still.
        let alphaUp = Double(blockSize) / (Double(settings.sampleRate) * 1.0)
        if blocksSeen <= Self.warmUpBlocks {
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
        let decays = decayDb >= settings.minDecayDb || eventLastEnergy <= floor * 2
            || (earlyDecayDb >= settings.minEarlyDecayDb && broadband >= 2 * settings.minBroadband)
            || (earlyDecayDb >= settings.minEarlyDecayDb4k && broadband4k >= 1.5 * settings.minBroadband4k)
            || dipDb >= settings.minDipDb
        let wide = broadband >= settings.minBroadband || broadband4k >= settings.minBroadband4k
        // Even a rejected event starts the refractory period: its tail must not retrigger; nor may its echoes for a while.
        refractoryUntil = sample
        rejectedPeak = eventPeak
        rejectedBroadband = broadband
        rejectedUntil = sample + echoSamples
        var features = Candidate.Features(
            snrDb: snrDb, riseBlocks: eventPeakBlock, decayDb: decayDb, broadband: broadband,
            broadband4k: broadband4k, jumpDb: 10 * log10(max(eventJump, 1e-20)), earlyDecayDb: earlyDecayDb, dipDb: dipDb)
        features.laterPeakDb = 10 * log10(max(eventLateMax, 1e-30) / max(eventPeak, 1e-20))
        guard sharp else {
            if trace != nil { features.attackSamples = attackSamples(from: refineOnset()) }  // for a person reading the trace
            trace?(eventTriggerBlockStart, features, "slow rise")
            return
        }
        let onset = refineOnset()
        // The attack at the sample: samples from the onset until the 8-sample energy first reaches half its peak in the
        // next 128. A struck ball gets there within a few samples; a bounce on the mat, a tap or a clap ramps up.
        features.attackSamples = attackSamples(from: onset)
        if trace != nil {  // for a person reading the trace
            features.modality = modality()
            features.attackQuarterSamples = attackSamples(from: onset, fraction: 0.25)
            features.attackTenthSamples = attackSamples(from: onset, fraction: 0.1)
            features.modesDb = modesDb(from: onset)
            features.repetition = repetition(at: onset)
        }
        if !(decays && wide) {
            // A club head rings: its modes make the tail periodic, where a clap, a bounce, a tap or a hiss is noise. A
            // ringing tail stands for the decay a long-ringing driver does not show in 10 ms, and — with a fast attack and
            // some energy above 4 kHz — for the breadth a mishit's low modes lack (RoomCorpus tuning seeds, 2026-12-01).
            if features.modality < 0 { features.modality = modality() }
            let ringing = wide && features.modality >= settings.minModalityRinging
            // Less breadth asks for a stronger ring (a second tier, measured the same way). Several modes beat, so the
            // 8-sample energy of an abrupt onset may reach half its peak late: reaching a quarter of it at once counts too.
            let quarter = attackSamples(from: onset, fraction: 0.25)
            features.attackQuarterSamples = quarter
            let narrowModal = decays
                && ((broadband4k >= settings.minBroadband4kModal
                    && (features.attackSamples <= maxNarrowAttack || quarter <= maxNarrowQuarterAttack)
                    && features.modality >= settings.minModalityNarrow)
                    || (broadband4k >= settings.minBroadband4kStrongRing && features.attackSamples <= maxAttack - 4
                        && features.modality >= settings.minModalityStrongRing))
            // A strong ring from an abrupt onset is an impact even while a live room holds the level up for 10 ms
            // (these three: RoomCorpus tuning sessions 1–32, 2026-12-01).
            let undecayedRing = broadband4k >= settings.minBroadband4kModal && quarter <= maxRingQuarterAttack
                && features.modality >= settings.minModalityUndecayedRing
            if ringing || narrowModal || undecayedRing {
                // judged further below
            } else {
                // Several modes ringing at once, from an abrupt onset well over the floor, is a struck head whatever its
                // breadth or its decay in a live room; a tap, a bounce, a clap or a thud's slap is noise through at most
                // one resonance.
                // A level that falls far under the room's own noise is a flat top — a clipped converter, whose corners
                // ring the high-pass as predictably as a head rings — not a sound.
                let clipped = dipDb > snrDb + 10
                let abrupt = snrDb >= settings.minModesSnrDb && features.attackSamples <= maxModesAttack
                    && features.attackQuarterSamples <= maxModesQuarterAttack && !clipped
                if abrupt, features.modesDb < -90 { features.modesDb = modesDb(from: onset) }
                guard abrupt, features.modesDb >= settings.minModesDb else {
                    trace?(eventTriggerBlockStart, features, !decays ? "slow decay" : "narrowband")
                    return
                }
                let rep = repetition(at: onset)
                features.repetition = rep
                guard rep < settings.maxRepetitionModes else {
                    trace?(eventTriggerBlockStart, features, "a repeat (a voice)")
                    return
                }
                accept(features, onset: onset, snrDb: snrDb, decayDb: decayDb, broadband: broadband, emit: emit)
                return
            }
        }
        // Noise that ramps up and does not ring — a fricative, a breath — dips as noise does; that dip is no decay.
        if features.attackSamples >= minHissAttack, decayDb < settings.minHissDecayDb,
            earlyDecayDb < settings.minEarlyDecayDb + 2
        {
            if features.modality < 0 { features.modality = modality() }
            guard features.modality >= settings.maxModalityHiss else {
                trace?(eventTriggerBlockStart, features, "hiss")
                return
            }
        }
        // Noise that ramps up, short of broadband, neither rings nor holds several modes: a ball bouncing, a club tapping
        // the mat — the bounce is a burst of noise however fast it decays (RoomCorpus tuning sessions 1–32, 2026-12-01).
        if features.attackSamples >= minHissAttack, broadband < settings.minBroadbandBurst {
            if features.modality < 0 { features.modality = modality() }
            if features.modality < settings.maxModalityBurst {
                if features.modesDb < -90 { features.modesDb = modesDb(from: onset) }
                guard features.modesDb >= settings.minModesDbBurst else {
                    trace?(eventTriggerBlockStart, features, "burst of noise")
                    return
                }
            }
        }
        if features.attackSamples > maxAttack {
            // A slow attack is forgiven a tail that rings with some breadth: the onset was placed early (something just
            // before), not a sound that ramps up (RoomCorpus tuning seeds, 2026-12-01); or a ring whose onset reaches a
            // quarter of its peak at once — beating modes, not a ramp.
            if features.modality < 0 { features.modality = modality() }
            if features.attackQuarterSamples < 0 { features.attackQuarterSamples = attackSamples(from: onset, fraction: 0.25) }
            let ringsWide = features.modality >= settings.minModalityRinging && broadband4k >= settings.minBroadband4k
            let beats = features.attackQuarterSamples <= maxNarrowQuarterAttack && features.modality >= settings.minModalityNarrow
            guard ringsWide || beats else {
                trace?(eventTriggerBlockStart, features, "slow attack")
                return
            }
        }
        if broadband < settings.minBroadband {
            // Broad only above 4 kHz: a bounce on the mat or a club tap can be that too; an impact then either attacks
            // within a few samples or rings (RoomCorpus tuning seeds, 2026-12-01).
            if features.modality < 0 { features.modality = modality() }
            guard features.attackSamples <= max4kAttack || features.modality >= settings.minModality4k else {
                trace?(eventTriggerBlockStart, features, "slow attack for its breadth")
                return
            }
        }
        accept(features, onset: onset, snrDb: snrDb, decayDb: decayDb, broadband: broadband, emit: emit)
    }

    func accept(
        _ features: Candidate.Features, onset: Int64, snrDb: Double, decayDb: Double, broadband: Double,
        emit: (Candidate) -> Void
    ) {
        trace?(eventTriggerBlockStart, features, nil)
        refractoryUntil = onset + refractorySamples
        let score = min(1, max(0, (snrDb - settings.triggerDb) / 30)) * 0.4
            + min(1, (decayDb - settings.minDecayDb) / 20 + 0.5) * 0.2
            + min(1, broadband / 0.8) * 0.2 + (eventPeakBlock <= 1 ? 0.2 : 0.1)
        guard score >= settings.minScore else { return }
        let tof = tofSamples
        let impact = Double(onset) - (tof ?? 0)
        let t0 = streamStartNs + Int64((impact / Double(settings.sampleRate) * 1e9).rounded())
        emit(
            Candidate(
                id: nextID, onsetSample: onset, impactSample: impact, t0Ns: t0, score: score,
                features: features,
                tofCorrectionSamples: tof, tofProvenance: tof == nil ? "no tof_correction: the session declared no mic-to-ball distance" : settings.distanceProvenance,
                decidedAtSample: sample))
        nextID += 1
    }

    /// Samples from `onset` until the 8-sample energy of the high-passed signal first reaches half its largest value
    /// within the next 128 samples (at 48 kHz; scaled with the rate).
    func attackSamples(from onset: Int64, fraction: Double = 0.5) -> Int {
        let span = Int64(maxAttack * 6)
        let end = min(sample, onset + span)
        guard end - onset > 8, sample - onset < Int64(historyMask) else { return 0 }
        @inline(__always) func x2(_ k: Int64) -> Double {
            let v = Double(history[Int(k) & historyMask])
            return v * v
        }
        var run = 0.0
        for k in onset..<(onset + 8) { run += x2(k) }
        var peak = run
        var k = onset + 8
        while k < end {
            run += x2(k) - x2(k - 8)
            peak = max(peak, run)
            k += 1
        }
        run = 0
        for k in onset..<(onset + 8) { run += x2(k) }
        if run >= peak * fraction { return 0 }
        k = onset + 8
        while k < end {
            run += x2(k) - x2(k - 8)
            if run >= peak * fraction { return Int(k - onset - 7) }
            k += 1
        }
        return Int(end - onset)
    }

    /// How many modes ring: 10·log10 of the residual energy of the best 2nd-order linear predictor over that of the
    /// best 12th-order one, both fitted by least squares (the covariance method) to the high-passed signal from 6 to 198
    /// samples after the onset (at 48 kHz; scaled with the rate). A sum of k decaying sinusoids is predicted exactly by
    /// order 2k, so several modes leave the 12th-order residual at the noise while the 2nd-order one keeps all but one
    /// mode (a head: 4–28 dB); noise through a single resonance is predicted no better by 12 than by 2 (a tap, a bounce,
    /// a clap: under 3 dB). A voice's pulse rings several formants and scores like a head — `repetition(at:)` tells it.
    /// Per event, not per sample; no allocation (scratch from `init`).
    func modesDb(from onset: Int64) -> Double {
        let p = Self.modesOrder
        let n = modesLength
        let from = onset + Int64(modesOffset)
        guard from + Int64(n) <= sample, sample - from < Int64(historyMask) else { return 0 }
        let x = modesWindow
        for k in 0..<n { x[k] = Double(history[Int(from + Int64(k)) & historyMask]) }
        // Normal equations R·a = r over the targets x[p..<n]: R[i][j] = Σ x[t−1−i]·x[t−1−j], r[i] = Σ x[t]·x[t−1−i].
        let m = modesMatrix  // p rows of p + 1: R, then r in the last column
        var energy = 0.0
        for t in p..<n { energy += x[t] * x[t] }
        guard energy > 0 else { return 0 }
        for i in 0..<p {
            for j in i..<p {
                var c = 0.0
                for t in p..<n { c += x[t - 1 - i] * x[t - 1 - j] }
                m[i * (p + 1) + j] = c
                m[j * (p + 1) + i] = c
            }
            var c = 0.0
            for t in p..<n { c += x[t] * x[t - 1 - i] }
            m[i * (p + 1) + p] = c
        }
        return choleskyResidualRatioDb(m, p: p, energy: energy)
    }

    /// 10·log10(residual of order 2 / residual of order `p`) from the normal equations in `m` (p rows of p + 1), by one
    /// in-place Cholesky factorisation: the leading 2×2 block of the factor is the order-2 factor.
    func choleskyResidualRatioDb(_ m: UnsafeMutablePointer<Double>, p: Int, energy: Double) -> Double {
        let w = p + 1
        var trace = 0.0
        for i in 0..<p { trace += m[i * w + i] }
        let load = max(trace, 1e-30) * 1e-9
        // Factor R = L·Lᵀ in the lower triangle, and solve L·z = r alongside; the residual of order q is
        // energy − Σ_{i<q} z[i]².
        var explained = 0.0
        var explained2 = 0.0
        for i in 0..<p {
            for j in 0...i {
                var s = m[i * w + j] + (i == j ? load : 0)
                for k in 0..<j { s -= m[i * w + k] * m[j * w + k] }
                if i == j {
                    guard s > 0 else { return 0 }
                    m[i * w + i] = s.squareRoot()
                } else {
                    m[i * w + j] = s / m[j * w + j]
                }
            }
            var z = m[i * w + p]
            for k in 0..<i { z -= m[i * w + k] * m[k * w + p] }
            z /= m[i * w + i]
            m[i * w + p] = z
            explained += z * z
            if i == 1 { explained2 = explained }
        }
        let floor = energy * 1e-12
        return 10 * log10(max(energy - explained2, floor) / max(energy - explained, floor))
    }

    /// How closely the 2 ms from the onset repeat what sounded one voice period earlier: the largest normalised
    /// correlation between them and the same stretch 160–600 samples before (a voice's pitch, 80–300 Hz, at 48 kHz;
    /// scaled with the rate). A voice's glottal pulse rings its formants like the pulse before it; a struck head's onset
    /// follows the room's noise.
    func repetition(at onset: Int64) -> Double {
        let scale = Double(settings.sampleRate) / 48_000
        let w = max(16, Int(96 * scale))
        let minLag = max(w, Int(160 * scale)), maxLag = max(minLag + 1, Int(600 * scale))
        guard onset + Int64(w) <= sample, sample - (onset - Int64(maxLag)) < Int64(historyMask) else { return 0 }
        @inline(__always) func x(_ k: Int64) -> Double { Double(history[Int(k) & historyMask]) }
        var e0 = 0.0
        for k in 0..<w { e0 += x(onset + Int64(k)) * x(onset + Int64(k)) }
        guard e0 > 0 else { return 0 }
        // The earlier stretch's energy, slid one sample at a time.
        var e1 = 0.0
        for k in 0..<w { e1 += x(onset - Int64(minLag) + Int64(k)) * x(onset - Int64(minLag) + Int64(k)) }
        var best = 0.0
        for lag in minLag...maxLag {
            let from = onset - Int64(lag)
            if lag > minLag {
                // Moving one sample earlier: add the new first sample, drop the old last one.
                let add = x(from), drop = x(from + Int64(w))
                e1 += add * add - drop * drop
            }
            var c = 0.0
            for k in 0..<w { c += x(onset + Int64(k)) * x(from + Int64(k)) }
            if e1 > 0 { best = max(best, c / (e0 * max(e1, 1e-30)).squareRoot()) }
        }
        return best
    }

    /// How periodic the high-passed tail is: the largest normalised autocorrelation at lags of 4…48 samples (12 kHz down
    /// to 1 kHz at 48 kHz; scaled with the rate) over 2–10 ms after the trigger. A head's modes ring (0.55–0.8); noise
    /// does not (under 0.45).
    func modality() -> Double {
        let scale = Double(settings.sampleRate) / 48_000
        let from = eventTriggerBlockStart + Int64(96 * scale)
        let to = min(sample, eventTriggerBlockStart + Int64(480 * scale))
        let n = Int(to - from)
        let minLag = max(2, Int(4 * scale)), maxLag = max(minLag + 1, Int(48 * scale))
        guard n > maxLag * 2, sample - from < Int64(historyMask) else { return 0 }
        @inline(__always) func x(_ k: Int) -> Double { Double(history[Int(from + Int64(k)) & historyMask]) }
        var mean = 0.0
        for k in 0..<n { mean += x(k) }
        mean /= Double(n)
        var energy = 0.0
        for k in 0..<n { energy += (x(k) - mean) * (x(k) - mean) }
        guard energy > 0 else { return 0 }
        var best = -1.0
        for lag in minLag...maxLag {
            var c = 0.0
            for k in 0..<(n - lag) { c += (x(k) - mean) * (x(k + lag) - mean) }
            best = max(best, c / energy)
        }
        return best
    }

    /// The onset: the AIC change point of the high-passed signal in [trigger block − 4 blocks, peak block end].
    func refineOnset() -> Int64 {
        let peakEnd = eventTriggerBlockStart + Int64((eventPeakBlock + 1) * blockSize)
        let from = max(sample - Int64(historyMask), eventTriggerBlockStart - Int64(4 * blockSize), 0)
        let to = min(peakEnd, sample)
        let n = Int(to - from)
        guard n > 8 else { return eventTriggerBlockStart }
        // AIC(k) = k·ln(var(x[0..<k])) + (n−k)·ln(var(x[k..<n])), from prefix sums of squares (means ≈ 0 after the
        // high-pass). The onset is the first sample of the second segment.
        var total: Double = 0
        for i in 0..<n {
            let v = Double(history[Int(from + Int64(i)) & historyMask])
            total += v * v
        }
        var best = 0
        var bestAIC = Double.infinity
        var left: Double = 0
        for k in 1..<(n - 1) {
            let v = Double(history[Int(from + Int64(k - 1)) & historyMask])
            left += v * v
            let right = total - left
            let aic = Double(k) * log(max(left / Double(k), 1e-30)) + Double(n - k) * log(max(right / Double(n - k), 1e-30))
            if aic < bestAIC {
                bestAIC = aic
                best = k
            }
        }
        // AIC lands where the variance changes most, a few samples into a ramped rise; walk back while a 3-sample
        // energy stays clearly above the noise before the event (estimated from the window's first two blocks).
        var noise: Double = 0
        let quiet = min(best, 2 * blockSize)
        for i in 0..<quiet {
            let v = Double(history[Int(from + Int64(i)) & historyMask])
            noise += v * v
        }
        noise = max(noise / Double(max(1, quiet)), 1e-20)
        func energy3(_ k: Int) -> Double {
            var e: Double = 0
            for j in max(0, k - 1)...min(n - 1, k + 1) {
                let v = Double(history[Int(from + Int64(j)) & historyMask])
                e += v * v
            }
            return e / 3
        }
        var onset = best
        while onset > quiet + 1, energy3(onset - 1) > noise * settings.onsetWalkbackRatio { onset -= 1 }
        guard settings.rampRefinement else { return from + Int64(onset) }
        return from + Int64(rampOnset(near: onset, n: n, from: from, noise: noise))
    }

    /// A quiet impact's first samples lie under the noise, so the walk-back stops late. The rise is modelled instead:
    /// before the onset k0 the samples are noise (variance σ²); from k0 to the rise's end their variance grows as
    /// σ² + c·(k − k0 + 1)² — a linear amplitude ramp, c fitted by least squares for each k0 — and the k0 with the
    /// highest Gaussian likelihood over one fixed stretch is the onset. Measured on unseen corpus seeds before it was
    /// kept (see the README).
    func rampOnset(near guess: Int, n: Int, from: Int64, noise: Double) -> Int {
        @inline(__always) func x2(_ k: Int) -> Double {
            let v = Double(history[Int(from + Int64(k)) & historyMask])
            return v * v
        }
        let lo = max(1, guess - settings.rampSearchSamples)
        let hi = min(n - 2, guess + 2)
        guard hi > lo else { return guess }
        // The rise ends where the magnitude peaks within the longest rise the model allows.
        var end = guess
        var peak = 0.0
        for k in guess..<min(n, guess + settings.rampMaxSamples) where x2(k) > peak {
            peak = x2(k)
            end = k
        }
        let start = max(0, lo - 8)
        var best = guess
        var bestLL = -Double.infinity
        for k0 in lo...min(hi, end) {
            var num = 0.0
            var den = 0.0
            for k in k0...end {
                let t = Double(k - k0 + 1)
                num += (x2(k) - noise) * t * t
                den += t * t * t * t
            }
            let c = max(0, num / max(den, 1e-30))
            var ll = 0.0
            for k in start..<k0 { ll -= log(noise) + x2(k) / noise }
            for k in k0...end {
                let t = Double(k - k0 + 1)
                let v = noise + c * t * t
                ll -= log(v) + x2(k) / v
            }
            if ll > bestLL {
                bestLL = ll
                best = k0
            }
        }
        return best
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
