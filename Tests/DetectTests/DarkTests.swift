import Foundation
import Testing

@testable import Detect

/// `darkDb()`: the energy an event adds above 200 Hz against what it adds above 2 kHz. A head struck in the bay is
/// bright; the same impact through a partition (a low-pass: the mass law) is dark; what was sounding before — hum, a
/// fan — is not the event's.
@Suite struct DarkTests {
    /// A driver-like head: three modes at 3–7 kHz ringing from a crack at `ModesTests.onset`.
    static func head(_ n: Int) -> Double {
        guard n >= 0 else { return 0 }
        let t = Double(n) / Double(ModesTests.rate)
        let modes: [(f: Double, tau: Double, a: Double)] = [
            (3_100, 0.004, 0.3), (4_700, 0.003, 0.25), (6_900, 0.002, 0.2),
        ]
        return (n < 3 ? 0.5 : 0) + modes.reduce(0) { $0 + $1.a * exp(-t / $1.tau) * sin(2 * .pi * $1.f * t) }
    }

    /// `signal` through two one-pole low-passes at `hz` (−12 dB an octave above it): a partition.
    static func lowPassed(at hz: Double, _ signal: (Int) -> Double) -> [Double] {
        let a = exp(-2 * Double.pi * hz / Double(ModesTests.rate))
        var s1 = 0.0
        var s2 = 0.0
        return (0..<600).map { n in
            s1 = (1 - a) * signal(n) + a * s1
            s2 = (1 - a) * s1 + a * s2
            return s2 * 20  // as loud above 2 kHz as it can be made without clipping
        }
    }

    /// `darkDb()` of the detector fed `signal` (quiet noise under it), its event triggered in the onset's block.
    static func measured(_ signal: (Int) -> Double) -> Double {
        let d = ModesTests.fed(seed: 5, signal)
        d.eventTriggerBlock = ModesTests.onset / d.blockSize + 1
        return d.darkDb() ?? .nan  // measurable for every signal here: nan fails any bound
    }

    @Test func aHeadStruckInTheBayIsBright() {
        let db = Self.measured(Self.head)
        #expect(db >= 0 && db < 3, "struck head: \(db) dB")
    }

    @Test func theSameHeadThroughAPartitionIsDark() {
        let through = Self.lowPassed(at: 800, Self.head)
        let db = Self.measured { $0 >= 0 ? through[$0] : 0 }
        let bright = Self.measured(Self.head)
        #expect(
            db >= ImpactDetector.Settings(sampleRate: ModesTests.rate).minDarkDb && db > bright + 5,
            "through a partition: \(db) dB, struck: \(bright) dB")
    }

    @Test func humAlreadySoundingIsNotTheEvents() {
        // Mains hum 30 dB over the head's level above 2 kHz, from long before the event.
        let db = Self.measured { n in
            0.5 * sin(2 * .pi * 50 * Double(n + ModesTests.onset) / Double(ModesTests.rate)) + Self.head(n)
        }
        #expect(db >= 0 && db < 3, "struck head over hum: \(db) dB")
    }

    @Test func tooLittleHeardBeforeIsNotMeasured() {
        let d = ModesTests.fed(seed: 5, Self.head)
        d.eventTriggerBlock = 20  // 13 ms into the stream: not half of the 48 ms it is weighed against
        #expect(d.darkDb() == nil)
    }
}
