import Foundation

/// A labelled corpus for the impact detector: sessions of room noise with impacts (the truth) among distractors.
///
/// `clean`: noise floor −80…−55 dBFS RMS, impacts −45…−6 dBFS peak at least 20 dB over the floor, each preceded by a
/// swing whoosh. `hard`: the same plus hand claps, speech, tones, thuds, footsteps and a reverberant room.
/// Impact model: white noise under an envelope that rises linearly over 0–0.5 ms and decays with τ 0.7–4 ms; the truth
/// onset is the first sample of the rise (non-zero there). Distractor models are documented on each generator.
public enum ImpactCorpus {
    public enum Kind: String, Sendable, CaseIterable { case clean, hard }

    public struct Event: Sendable, Equatable, Codable {
        public var kind: String
        public var sample: Int64
        public var levelDbfs: Double
    }

    public struct Session: Sendable {
        public var name: String
        public var sampleRate: Int
        public var samples: [Float]
        /// Truth: impact onset samples.
        public var impacts: [Int64]
        /// Every event, impacts and distractors, for a person reading the truth file.
        public var events: [Event]
    }

    /// The plugin's one generator (SplitMix64), with the draws the corpus needs.
    typealias RNG = SplitMix64

    static func amp(_ db: Double) -> Float { Float(pow(10, db / 20)) }

    /// One session of `seconds` at `sampleRate`, reproducible from `seed`.
    public static func session(_ kind: Kind, seed: UInt64, seconds: Double = 20, sampleRate: Int = 48_000) -> Session {
        var rng = RNG(seed: seed &* 0x2545_F491_4F6C_DD1D &+ (kind == .hard ? 7 : 3))
        let fs = Double(sampleRate)
        let n = Int(seconds * fs)
        var x = [Float](repeating: 0, count: n)
        let floorDb = rng.range(-80, -55)
        let floorAmp = amp(floorDb)
        for i in 0..<n { x[i] = floorAmp * rng.gauss() }
        var events: [Event] = []
        var impacts: [Int64] = []
        // Impacts at least 1.5 s apart, 0.8 s from the ends.
        var t = rng.range(0.8, 2.0)
        while t < seconds - 0.8 {
            let onset = Int(t * fs)
            let level = max(rng.range(-45, -6), floorDb + 20)
            whoosh(&x, endingAt: onset, fs: fs, level: level - rng.range(12, 30), rng: &rng)
            impact(&x, at: onset, fs: fs, level: level, rng: &rng, reverb: kind == .hard && rng.unit() < 0.5)
            impacts.append(Int64(onset))
            events.append(Event(kind: "impact", sample: Int64(onset), levelDbfs: level))
            t += rng.range(1.5, 3.5)
        }
        if kind == .hard {
            // Distractors in the gaps, at least 60 ms from any impact.
            let count = Int(seconds / 1.2)
            for _ in 0..<count {
                let at = Int(rng.range(0.2, seconds - 0.5) * fs)
                if impacts.contains(where: {
                    abs(Int($0) - at) < Int(0.06 * fs) || (at < Int($0) && Int($0) - at < Int(0.45 * fs))
                }) {
                    continue
                }
                let which = rng.next() % 5
                let level = rng.range(-35, -8)
                switch which {
                case 0: clap(&x, at: at, fs: fs, level: level, rng: &rng)
                case 1: speech(&x, at: at, fs: fs, level: level, rng: &rng)
                case 2: tone(&x, at: at, fs: fs, level: level - 6, rng: &rng)
                case 3: thud(&x, at: at, fs: fs, level: level, rng: &rng)
                default: footstep(&x, at: at, fs: fs, level: level, rng: &rng)
                }
                events.append(
                    Event(
                        kind: ["clap", "speech", "tone", "thud", "footstep"][Int(which)], sample: Int64(at),
                        levelDbfs: level))
            }
        }
        for i in 0..<n { x[i] = max(-1, min(1, x[i])) }
        events.sort { $0.sample < $1.sample }
        return Session(
            name: "\(kind.rawValue)-\(seed)", sampleRate: sampleRate, samples: x, impacts: impacts, events: events)
    }

    /// The club–ball impact: broadband, rise 0–0.5 ms, decay τ 0.7–4 ms; optionally a reverberant tail 14–24 dB down.
    static func impact(_ x: inout [Float], at onset: Int, fs: Double, level: Double, rng: inout RNG, reverb: Bool) {
        let a = amp(level)
        let rise = Int(rng.range(0, 0.0005) * fs)
        let tau = rng.range(0.0007, 0.004) * fs
        let length = min(x.count - onset, Int(tau * 10) + rise)
        for d in 0..<length {
            let env = d < rise ? Float(d + 1) / Float(rise + 1) : Float(exp(-Double(d - rise) / tau))
            // The first sample carries full sign so the onset is unambiguous.
            x[onset + d] += a * env * (d == 0 ? 1 : rng.signedUnitFloat())
        }
        if reverb {
            let rt60 = rng.range(0.3, 0.8)
            let tauR = rt60 / 6.9 * fs
            let ra = a * amp(-rng.range(14, 24))
            let start = onset + Int(0.003 * fs)
            for d in 0..<max(0, min(x.count - start, Int(tauR * 6))) {
                x[start + d] += ra * Float(exp(-Double(d) / tauR)) * rng.gauss() * 0.5
            }
        }
    }

    /// The swing's whoosh: low-passed noise swelling over 300 ms, ending at the impact.
    static func whoosh(_ x: inout [Float], endingAt end: Int, fs: Double, level: Double, rng: inout RNG) {
        let length = Int(0.3 * fs)
        let a = amp(level) * 4
        var lp: Float = 0
        for d in 0..<length where end - length + d >= 0 {
            lp += 0.04 * (rng.signedUnitFloat() - lp)
            let phase = Float(d) / Float(length)
            x[end - length + d] += a * lp * phase * phase
        }
    }

    /// A hand clap: noise band-limited to about 0.8–3.5 kHz, rise 1–2 ms, decay τ 8–20 ms.
    static func clap(_ x: inout [Float], at: Int, fs: Double, level: Double, rng: inout RNG) {
        let a = amp(level) * 2.5
        let rise = Int(rng.range(0.001, 0.002) * fs)
        let tau = rng.range(0.008, 0.02) * fs
        var lpFast: Float = 0
        var lpSlow: Float = 0
        let cFast = Float(1 - exp(-2 * Double.pi * 3500 / fs))
        let cSlow = Float(1 - exp(-2 * Double.pi * 800 / fs))
        for d in 0..<max(0, min(x.count - at, Int(tau * 8) + rise)) {
            let w = rng.signedUnitFloat()
            lpFast += cFast * (w - lpFast)
            lpSlow += cSlow * (w - lpSlow)
            let env = d < rise ? Float(d) / Float(rise) : Float(exp(-Double(d - rise) / tau))
            x[at + d] += a * env * (lpFast - lpSlow)
        }
    }

    /// Voiced speech: harmonics of 100–220 Hz up to 3.5 kHz, syllables of 150–300 ms with 20 ms attacks.
    static func speech(_ x: inout [Float], at: Int, fs: Double, level: Double, rng: inout RNG) {
        let a = amp(level) / 3
        let f0 = rng.range(100, 220)
        let syllables = Int(rng.range(2, 6))
        var start = at
        for _ in 0..<syllables where start < x.count {
            let length = Int(rng.range(0.15, 0.3) * fs)
            let attack = Int(0.02 * fs)
            for d in 0..<max(0, min(x.count - start, length)) {
                let env = Float(min(1, Double(d) / Double(attack))) * Float(min(1, Double(length - d) / Double(attack)))
                var v: Double = 0
                var h = 1.0
                while f0 * h < 3500 {
                    v += sin(2 * Double.pi * f0 * h * Double(d) / fs) / h
                    h += 1
                }
                x[start + d] += a * env * Float(v)
            }
            start += length + Int(rng.range(0.05, 0.15) * fs)
        }
    }

    /// A steady tone (1–6 kHz) of 0.3–1 s with 50 ms fades.
    static func tone(_ x: inout [Float], at: Int, fs: Double, level: Double, rng: inout RNG) {
        let a = amp(level)
        let f = rng.range(1000, 6000)
        let length = Int(rng.range(0.3, 1.0) * fs)
        let fade = Int(0.05 * fs)
        for d in 0..<max(0, min(x.count - at, length)) {
            let env = Float(min(1, Double(d) / Double(fade))) * Float(min(1, Double(length - d) / Double(fade)))
            x[at + d] += a * env * Float(sin(2 * Double.pi * f * Double(d) / fs))
        }
    }

    /// A thud (a bag set down): 60–150 Hz, fast rise, τ 30–80 ms.
    static func thud(_ x: inout [Float], at: Int, fs: Double, level: Double, rng: inout RNG) {
        let a = amp(level)
        let f = rng.range(60, 150)
        let tau = rng.range(0.03, 0.08) * fs
        for d in 0..<max(0, min(x.count - at, Int(tau * 6))) {
            x[at + d] += a * Float(exp(-Double(d) / tau) * sin(2 * Double.pi * f * Double(d) / fs))
        }
    }

    /// A footstep: a 100–600 Hz knock, rise 3 ms, τ 15–30 ms.
    static func footstep(_ x: inout [Float], at: Int, fs: Double, level: Double, rng: inout RNG) {
        let a = amp(level) * 2
        let tau = rng.range(0.015, 0.03) * fs
        let rise = Int(0.003 * fs)
        var lp: Float = 0
        let c = Float(1 - exp(-2 * Double.pi * 600 / fs))
        for d in 0..<max(0, min(x.count - at, Int(tau * 6) + rise)) {
            lp += c * (rng.signedUnitFloat() - lp)
            let env = d < rise ? Float(d) / Float(rise) : Float(exp(-Double(d - rise) / tau))
            x[at + d] += a * env * lp
        }
    }
}
