import Foundation

extension ImpactDetector {
    public struct Settings: Sendable, Equatable {
        public var sampleRate: Int
        /// Block energy above the noise floor that opens an event, dB.
        public var triggerDb: Double = 10
        /// …and above the loudest of the previous four blocks, dB: an impact jumps; a whoosh, a voice or a fade swells.
        /// 8 since rules 18–20 (9 before: 8 then opened as many false positives as impacts; now RoomCorpus tuning hard
        /// +7 impacts, +2 false positives, and six ImpactCorpus seed sets better, none worse; 7 adds RoomCorpus false
        /// positives. 2026-12-01).
        public var jumpDb: Double = 8
        /// A block too quiet above 2 kHz to trigger may trigger above 4 kHz, against that band's own floor and jump
        /// (`triggerDb`, `jumpDb`): a quiet impact under low-frequency room noise (RoomCorpus tuning sessions 1–32 and
        /// ImpactCorpus seed sets, 2026-12-01).
        public var triggerAbove4k = true
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
        /// …or it is struck: its excitation an impulse (`impulseDb(at:)` at least `minImpulseDb`), its tail ringing
        /// (modality at least `minModalityStruck`) with at least `minModesDbStruck` of modes (rule 20; RoomCorpus tuning
        /// sessions 1–32 and ImpactCorpus seeds 1–12, 2026-12-01: without the ring, an ImpactCorpus voice's pulse came in).
        /// 14, not 12 where RoomCorpus scores a little better: ImpactCorpus's voices, claps and thuds begin to come in
        /// at 11 (errors on its fourteen 12-seed sets: 85 at 12 and 14, 90 at 11, 118 at 10), so 14 keeps a margin.
        public var minImpulseDb: Double = 14
        public var minModesDbStruck: Double = 2
        public var minModalityStruck = 0.35
        /// …and it stands at least this far over the floor, dB.
        public var minStruckSnrDb: Double = 12
        /// …or, with fewer modes than that, not dark (`darkDb()` under this): a mishit rings one mode, and what the modes
        /// kept out — a thud's impulse, ringing nothing above 2 kHz — is 18–41 dB dark, struck mishits 2–8 (rule 23;
        /// RoomCorpus tuning sessions 1–32 and ImpactCorpus seeds 1–12, 2026-12-01).
        public var maxDarkDbOneMode: Double = 10
        /// …or, with a weaker impulse (at least `minImpulseDbLoud`), it stands at least `minStruckLoudSnrDb` over the floor,
        /// rings at least `minModalityStruckLoud` and is bright (measured and under `minDarkDb`): a mishit's modes outsound
        /// its crack (rule 25; RoomCorpus tuning sessions 1–32 and ImpactCorpus seeds 1–12, 2026-12-01).
        public var minStruckLoudSnrDb: Double = 20
        public var minModalityStruckLoud = 0.5
        public var minImpulseDbLoud: Double = 10
        /// No event is an impact whose onset repeats, with correlation `maxRepetition` or more, what sounded 3–12.5 ms before
        /// it (`repetition(at:)`): that is the earlier sound again — its reflection off a wall, a clap or a tap repeating, a
        /// voice's next pulse — where a struck ball starts a sound of its own (RoomCorpus tuning sessions 1–32 and
        /// ImpactCorpus seeds 1–12, 2026-12-01: 0.7 would refuse an ImpactCorpus impact at 0.79).
        public var maxRepetition = 0.8
        /// No event is an impact when the energy it adds above 200 Hz stands this far or more over what it adds
        /// above 2 kHz (`darkDb()`), its excitation is no impulse (`impulseDb(at:)` under `minImpulseDb`) and it is short
        /// of broadband (under `minBroadband` above 6 kHz): an impact heard through a partition, which passes its low
        /// frequencies and stops its high ones (the mass law). A ball struck in the bay is bright — its impacts add a
        /// median of 2 dB more above 200 Hz than above 2 kHz, 95 % under 5 — or an impulse, or broadband (rule 22;
        /// RoomCorpus tuning sessions 1–32 and ImpactCorpus seeds 1–12, 2026-12-01).
        public var minDarkDb: Double = 6
        /// A sound that ramps up (attack ≥ `minHissAttackSamples48k`) with less than this share above 6 kHz, rings less than
        /// `maxModalityBurst` and holds less than `minModesDbBurst` of several modes is a burst of noise: a bounce, a tap.
        public var minBroadbandBurst: Double = 0.3
        public var maxModalityBurst = 0.5
        public var minModesDbBurst: Double = 1.5
        /// No event is an impact when it ends a bouncing ball's train: it and the three events before it (whatever their
        /// verdicts) are each within `maxBounceIntervalSeconds` of the last, the intervals shrink by a ratio within
        /// `bounceRatios` that stays within `bounceRatioTolerance` from one interval to the next (a ball's restitution), and
        /// no event is more than `bounceLevelToleranceDb` louder than the one before it. (A ball's late bounces are quiet,
        /// quick and may start abruptly; a struck ball is not the fourth term of a geometric series.) Off when
        /// `bounceRatioTolerance` is negative.
        public var bounceRatios: ClosedRange<Double> = 0.45...0.9
        public var bounceRatioTolerance: Double = 0.1
        public var maxBounceIntervalSeconds: Double = 0.6
        public var bounceLevelToleranceDb: Double = 3
        /// No event is an impact when it is quiet (under `unstruckSnrDb` over the floor), has not decayed by `minDecayDb`
        /// in 10 ms, and nothing in it was struck: no impulse at its onset (`impulseDb(at:)` under `unstruckImpulseDb`),
        /// no modes (`modesDb(from:)` under `unstruckModesDb`) and no ring (`modality()` under `unstruckModality`) — a
        /// fricative or a plosive's burst, a ball's soft landing (rule 28; RoomCorpus tuning sessions 1–96, 2026-12-02:
        /// 12 of 21 clean false positives refused, 3 532 of 3 534 impacts kept). Loud or quickly decayed noise with
        /// nothing struck stays an impact: ImpactCorpus's impacts are such bursts (1 of its 3 016 lost). Off when
        /// `unstruckSnrDb` is 0.
        public var unstruckSnrDb: Double = 13
        public var unstruckImpulseDb: Double = 6
        public var unstruckModesDb: Double = 3
        public var unstruckModality = 0.4
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

        /// The highest rate the detector accepts: 768 kHz, the highest any sound card offers (assumed: the top of
        /// ALSA's rate list). Its buffers scale with the rate, so a file's header claiming gigahertz (a WAV's rate is
        /// any 32-bit number) would have it allocate gigabytes before it could judge anything.
        public static let maximumSampleRate = 768_000

        /// Why these settings cannot be used, if they cannot.
        public var problem: String? {
            if sampleRate < Self.minimumSampleRate {
                return
                    "sample rate \(sampleRate) Hz: impact detection needs at least \(Self.minimumSampleRate) Hz (it tells an impact by its energy above 6 kHz)"
            }
            if sampleRate > Self.maximumSampleRate {
                return
                    "sample rate \(sampleRate) Hz: no sound card records above \(Self.maximumSampleRate) Hz; a rate past it is a damaged or hostile header, not audio"
            }
            return nil
        }
    }
}
