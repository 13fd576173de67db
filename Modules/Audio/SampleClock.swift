/// An audio device's sample clock against the capture clock (CLOCK_MONOTONIC), estimated continuously from
/// (sample position, time) points — for ALSA, one `snd_pcm_status` reading per period (seed 001: drift tracking).
///
/// The fit is least squares of time on position with exponential forgetting (time constant `horizonPoints`), kept
/// centred so that hours of samples lose no precision. Until the points span `minimumSpanSamples` the nominal rate is
/// used and only the offset is fitted. Everything is a struct of numbers: adding a point allocates nothing.
///
/// `ratePpm` is (actual rate / nominal − 1) × 10⁶; `uncertaintyPpm` its standard error from the residual scatter,
/// treating the timestamps' jitter as independent (derived, not a calibration).
public struct SampleClock: Sendable {
    public let nominalRate: Int
    public let horizonPoints: Int
    public let minimumSpanSamples: Double
    /// Points added.
    public private(set) var points: Int = 0
    var originX: Double = 0
    var originY: Double = 0
    var meanX: Double = 0
    var meanY: Double = 0
    var cxx: Double = 0
    var cxy: Double = 0
    var cyy: Double = 0
    var minX: Double = .infinity
    var maxX: Double = -.infinity

    public init(nominalRate: Int, horizonPoints: Int = 6000, minimumSpanSeconds: Double = 2) {
        self.nominalRate = nominalRate
        self.horizonPoints = max(2, horizonPoints)
        self.minimumSpanSamples = minimumSpanSeconds * Double(nominalRate)
    }

    /// Nanoseconds per sample at the nominal rate.
    public var nominalSlope: Double { 1e9 / Double(nominalRate) }

    /// Adds that sample `position` was at the converter at `timeNs`.
    public mutating func add(position: Int64, timeNs: Int64) {
        if points == 0 {
            originX = Double(position)
            originY = Double(timeNs)
        }
        let x = Double(position) - originX
        let y = Double(timeNs) - originY
        points += 1
        let a = max(1 / Double(points), 1 / Double(horizonPoints))
        let dx = x - meanX
        let dy = y - meanY
        meanX += a * dx
        meanY += a * dy
        cxx = (1 - a) * (cxx + a * dx * dx)
        cxy = (1 - a) * (cxy + a * dx * dy)
        cyy = (1 - a) * (cyy + a * dy * dy)
        minX = min(minX, x)
        maxX = max(maxX, x)
    }

    /// Whether the points span enough samples for the rate to be fitted (before that: nominal rate).
    public var isRateFitted: Bool { points >= 8 && maxX - minX >= minimumSpanSamples && cxx > 0 }

    /// Nanoseconds per sample: fitted, or nominal before the fit is ready.
    public var slope: Double { isRateFitted ? cxy / cxx : nominalSlope }

    /// The device's rate against the capture clock, ppm from nominal; nil before the fit is ready.
    public var ratePpm: Double? { isRateFitted ? (nominalSlope / slope - 1) * 1e6 : nil }

    /// Standard error of `ratePpm`; nil before the fit is ready.
    public var uncertaintyPpm: Double? {
        guard isRateFitted else { return nil }
        let b = slope
        let residual = max(0, cyy - b * cxy)
        let effective = min(Double(points), Double(horizonPoints))
        guard effective > 2 else { return nil }
        let se = (residual / (cxx * (effective - 2))).squareRoot()
        return se / b * 1e6
    }

    /// The capture-clock time of sample `position` (fractional), ns; nil before any point.
    public func timeNs(ofSample position: Double) -> Int64? {
        guard points > 0 else { return nil }
        let x = position - originX
        return Int64((originY + meanY + slope * (x - meanX)).rounded())
    }
}
