import Foundation
import Testing

@testable import Detect

/// `ImpactProminence`: how far a labelled impact stands over the room's noise above 2 kHz — what `detect eval` reports
/// recall by, so a reader can tell misses no level-based listener could hear from misses the detector should not make.
@Suite struct ProminenceTests {
    static let rate = 48_000

    /// White noise of `noise` RMS, with a 1 ms burst of `click` amplitude at each onset.
    static func signal(noise: Double, click: Double, onsets: [Int], count: Int) -> [Float] {
        var state: UInt64 = 3
        var x = [Float](repeating: 0, count: count)
        for i in 0..<count {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let u = Double(state >> 11) / Double(1 << 53) * 2 - 1
            x[i] = Float(u * noise * 3.0.squareRoot())
        }
        for o in onsets { for k in 0..<48 { x[o + k] += Float(click * (k % 2 == 0 ? 1 : -1) * exp(-Double(k) / 12)) } }
        return x
    }

    @Test func aClickFarOverTheNoiseStandsFarOverItAndTheNoiseAloneDoesNot() {
        let x = Self.signal(noise: 1e-3, click: 0.1, onsets: [30_000], count: 60_000)
        let db = ImpactProminence.decibels(samples: x, sampleRate: Self.rate, onsets: [30_000, 45_000])
        #expect(db[0] > 20, "click: \(db[0]) dB")
        #expect(db[1] < 6, "noise alone: \(db[1]) dB")
        #expect(ImpactProminence.bins[ImpactProminence.bin(db[0])].label == "20 dB or more")
        #expect(ImpactProminence.bins[ImpactProminence.bin(db[1])].label == "under 6 dB")
    }

    @Test func anOnsetWithoutHalfASecondBeforeItIsNotMeasured() {
        let x = Self.signal(noise: 1e-3, click: 0.1, onsets: [1_000], count: 10_000)
        let db = ImpactProminence.decibels(samples: x, sampleRate: Self.rate, onsets: [1_000, 9_990])
        #expect(db.allSatisfy { $0 == -.infinity })
        #expect(db.allSatisfy { ImpactProminence.bins[ImpactProminence.bin($0)].label.hasPrefix("not measured") })
    }
}
