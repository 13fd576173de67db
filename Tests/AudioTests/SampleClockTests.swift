import Audio
import Testing

@Suite struct SampleClockTests {
    /// A card 40 ppm fast with ±0.3 ms of timestamp jitter (period-granular readings): the fit finds the rate within
    /// its own stated uncertainty (×4), and maps samples to times within the jitter.
    @Test func fitsACardsRateAndStatesItsUncertainty() {
        let rate = 48_000
        let truePpm = 40.0
        var clock = SampleClock(nominalRate: rate, horizonPoints: 6000)
        var rng = SystemRandomNumberGenerator()
        let nsPerSample = 1e9 / (Double(rate) * (1 + truePpm / 1e6))
        let start: Int64 = 5_000_000_000_000
        #expect(clock.timeNs(ofSample: 0) == nil)
        for k in 0..<6000 {  // 60 s, one point per 10 ms
            let position = Int64(k * 480)
            let jitter = Double.random(in: -300_000...300_000, using: &rng)
            clock.add(position: position, timeNs: start + Int64(Double(position) * nsPerSample + jitter))
            if k == 10 { #expect(clock.ratePpm == nil, "not fitted before the points span 2 s") }
        }
        let ppm = try! #require(clock.ratePpm)
        let u = try! #require(clock.uncertaintyPpm)
        #expect(u > 0 && u < 5)
        #expect(abs(ppm - truePpm) <= 4 * u + 0.5, "fitted \(ppm) ± \(u) ppm, true \(truePpm)")
        let at = Double(6000 * 480)
        let mapped = try! #require(clock.timeNs(ofSample: at))
        #expect(abs(Double(mapped - start) - at * nsPerSample) < 300_000)
        // The nominal rate would have been off by 40 ppm × 60 s = 2.4 ms.
        #expect(abs(at * 1e9 / Double(rate) - at * nsPerSample) > 2_000_000)
    }

    @Test func holdsPrecisionHoursIntoAStream() {
        var clock = SampleClock(nominalRate: 48_000, horizonPoints: 1000)
        let base: Int64 = 48_000 * 3600 * 5  // five hours of samples
        for k in 0..<2000 {
            let p = base + Int64(k) * 4800
            clock.add(position: p, timeNs: 900_000_000_000_000 + p * 1_000_000_000 / 48_000)
        }
        #expect(abs(clock.ratePpm!) < 0.01)
        #expect(
            clock.timeNs(ofSample: Double(base + 4800 * 2000)) == 900_000_000_000_000 + (base + 4800 * 2000)
                * 1_000_000_000 / 48_000)
    }
}
