/// The truth a synthetic session is generated from: when the club hits the ball, and where the shaft is at any
/// instant. Video, audio and IMU are all drawn from one script on one clock, so a test knows exactly which frame shows
/// the impact and which sample starts it.
public struct SwingScript: Sendable, Equatable {
    /// Impact times, nanoseconds on the capture clock, ascending.
    public let impactsNs: [Int64]

    public init(impactsNs: [Int64]) { self.impactsNs = impactsNs.sorted() }

    /// From seconds after `startNs`.
    public init(impactSeconds: [Double], startNs: Int64) {
        self.init(impactsNs: impactSeconds.map { startNs + Int64(($0 * 1e9).rounded()) })
    }

    // Phases relative to an impact at 0, in nanoseconds.
    static let backswingStart: Int64 = -1_000_000_000
    static let top: Int64 = -250_000_000
    static let finish: Int64 = 500_000_000
    static let recovered: Int64 = 1_500_000_000
    static let topDegrees = 270.0
    static let finishDegrees = -240.0

    /// The impact whose swing is in progress at `t` (from backswing start to recovery), if any.
    public func swing(at t: Int64) -> Int64? {
        for i in impactsNs where t >= i + Self.backswingStart && t < i + Self.recovered { return i }
        return nil
    }

    /// Shaft angle in degrees from vertical (0 at address and at impact; positive going back), at `t`.
    public func shaftDegrees(at t: Int64) -> Double {
        guard let i = swing(at: t) else { return 0 }
        let dt = t - i
        func lerp(_ a: Double, _ b: Double, _ t0: Int64, _ t1: Int64) -> Double {
            a + (b - a) * Double(dt - t0) / Double(t1 - t0)
        }
        switch dt {
        case ..<Self.top: return lerp(0, Self.topDegrees, Self.backswingStart, Self.top)
        case ..<0: return lerp(Self.topDegrees, 0, Self.top, 0)
        case ..<Self.finish: return lerp(0, Self.finishDegrees, 0, Self.finish)
        default: return lerp(Self.finishDegrees, 0, Self.finish, Self.recovered)
        }
    }

    /// Whether the ball sits on the tee at `t`: it leaves at the impact instant and a new one is teed at recovery.
    public func ballPresent(at t: Int64) -> Bool {
        for i in impactsNs where t >= i && t < i + Self.recovered { return false }
        return true
    }
}

/// A small, fast, deterministic pseudo-random generator (SplitMix64) so synthetic sessions repeat exactly (and the
/// tools' benchmarks make incompressible bytes quickly, and tests' random choices — delays, kill points — repeat for a
/// given seed). The one seeded generator in ppc.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    var state: UInt64
    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in [-1, 1).
    mutating func signedUnit() -> Float {
        Float(Int64(bitPattern: next()) >> 40) / Float(1 << 23)
    }

    /// Uniform in [0, 1).
    public mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
    mutating func range(_ a: Double, _ b: Double) -> Double { a + (b - a) * unit() }
    /// Uniform in [-1, 1) at double precision, as Float.
    mutating func signedUnitFloat() -> Float { Float(range(-1, 1)) }
    /// Approximately Gaussian (the sum of four uniforms), unit variance.
    mutating func gauss() -> Float { Float((unit() + unit() + unit() + unit() - 2) * 1.7320508) }
}
