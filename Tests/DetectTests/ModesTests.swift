import Foundation
import Testing

@testable import Detect

/// The measures of an event's ring, on constructed signals. `modesDb()`: a 12th-order linear predictor against a
/// 2nd-order one over the 4 ms after an onset — several decaying sinusoids are what a struck head sounds like; noise
/// through one resonance is what a tap, a bounce or a clap does. `impulseDb(at:)`: what that predictor leaves at the
/// onset — an impulse for a struck mode, noise for a rung one. `repetition(at:)`: a voice repeats its pulse.
@Suite struct ModesTests {
    static let rate = 48_000
    static let onset = 24_000

    /// The detector fed quiet noise (seeded) plus `signal(i − onset)` at every sample i, up to 12 ms after the onset.
    static func fed(seed: UInt64, _ signal: (Int) -> Double) -> ImpactDetector {
        var state = seed
        let count = onset + 600
        var x = [Float](repeating: 0, count: count)
        for i in 0..<count {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let background = (Double(state >> 11) / Double(1 << 53) * 2 - 1) * 1e-4
            x[i] = Float(background + signal(i - onset))
        }
        let d = ImpactDetector(.init(sampleRate: rate))
        x.withUnsafeBufferPointer { d.process($0) { _ in } }
        return d
    }

    /// `modesDb` of quiet noise, then `signal` from `onset`.
    static func measured(_ signal: (Int) -> Double, seed: UInt64 = 7) -> Double {
        fed(seed: seed) { n in n >= 0 ? signal(n) : 0 }.modesDb(from: Int64(onset))
    }

    /// Noise through a two-pole resonance at `hz` with quality `q`, under an envelope decaying over `samples` — a clap, a
    /// tap: what rings one mode without striking it.
    static func rungByNoise(hz: Double, q: Double, level: Double, decaySamples: Double, seed: UInt64) -> [Double] {
        let e = noise(seed: seed)
        var y1 = 0.0
        var y2 = 0.0
        let w = 2 * Double.pi * hz / Double(rate)
        let r = exp(-w / (2 * q))
        var out = [Double](repeating: 0, count: 600)
        for n in 0..<600 {
            let y = e(n) * level * exp(-Double(n) / decaySamples) + 2 * r * cos(w) * y1 - r * r * y2
            out[n] = y
            y2 = y1
            y1 = y
        }
        return out
    }

    static func noise(seed: UInt64) -> (Int) -> Double {
        var state = seed
        var table = [Double](repeating: 0, count: 600)
        for i in 0..<600 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            table[i] = Double(state >> 11) / Double(1 << 53) * 2 - 1
        }
        return { table[$0] }
    }

    @Test func severalRingingModesArePredictedFarBetterAtOrderTwelve() {
        let modes: [(f: Double, tau: Double, a: Double)] = [
            (3_100, 0.004, 0.3), (4_700, 0.003, 0.25), (6_900, 0.002, 0.2),
        ]
        let db = Self.measured { n in
            let t = Double(n) / Double(Self.rate)
            return modes.reduce(0) { $0 + $1.a * exp(-t / $1.tau) * sin(2 * .pi * $1.f * t) }
        }
        #expect(db > 10, "three modes: \(db) dB")
    }

    @Test func oneResonanceRungByNoiseIsNoBetterAtOrderTwelve() {
        // A clap: white noise through a two-pole resonance at 2.5 kHz (Q 5), under a decaying envelope.
        let out = Self.rungByNoise(hz: 2_500, q: 5, level: 0.05, decaySamples: 300, seed: 99)
        let db = Self.measured { out[$0] }
        #expect(db < 3, "one resonance rung by noise: \(db) dB")
    }

    /// `repetition(at:)` of quiet noise plus `signal` (before the onset too).
    static func repetition(_ signal: (Int) -> Double) -> Double {
        fed(seed: 11, signal).repetition(at: Int64(onset))
    }

    /// A voice: glottal pulses every 5 ms (200 Hz) ringing two formants in the 2 kHz band, the onset one pulse among many.
    @Test func aVoicesPulseRepeatsThePulseBeforeItAndAnImpactDoesNot() {
        func ring(_ n: Int) -> Double {
            guard n >= 0 else { return 0 }
            let t = Double(n) / Double(Self.rate)
            return 0.2 * exp(-t / 0.0015) * sin(2 * .pi * 2_600 * t) + 0.1 * exp(-t / 0.001) * sin(2 * .pi * 3_400 * t)
        }
        let period = 240
        let voice = Self.repetition { n in (-8...2).reduce(0) { $0 + ring(n - $1 * period) } }
        let impact = Self.repetition { n in ring(n) }
        #expect(voice > 0.9, "voice: \(voice)")
        #expect(impact < 0.3, "impact: \(impact)")
    }

    /// `impulseDb(at:)` of quiet noise, then `signal` from `onset` (after `modesDb` has fitted the ring's predictor, as
    /// the detector does).
    static func impulse(_ signal: (Int) -> Double) -> Double {
        let d = fed(seed: 5) { n in n >= 0 ? signal(n) : 0 }
        _ = d.modesDb(from: Int64(onset))
        return d.impulseDb(at: Int64(onset))
    }

    /// A mishit: a two-sample contact crack ringing one mode at 3.2 kHz; against a clap: the same mode rung by noise
    /// for as long as it sounds.
    @Test func aStruckModeLeavesAnImpulseAndAModeRungByNoiseDoesNot() {
        func mode(_ n: Int) -> Double {
            let t = Double(n) / Double(Self.rate)
            return 0.3 * exp(-t / 0.003) * sin(2 * .pi * 3_200 * t)
        }
        let struck = Self.impulse { n in (n < 2 ? 0.4 : 0) + mode(n) }
        let rung = Self.rungByNoise(hz: 3_200, q: 20, level: 0.03, decaySamples: 150, seed: 42)
        let noise = Self.impulse { rung[$0] }
        let threshold = ImpactDetector.Settings(sampleRate: Self.rate).minImpulseDb
        #expect(struck > threshold + 10, "struck: \(struck) dB")
        #expect(noise < threshold, "rung by noise: \(noise) dB")
    }

    @Test func silenceAfterTheOnsetMeasuresNothingRatherThanFailing() {
        #expect(Self.measured { _ in 0 } < 3)
    }
}
