import Foundation
import Pipeline

/// `synthetic.imu`: IMU samples at a fixed rate; gravity on z, and a rotation rate about y that follows the
/// ``SwingScript``'s shaft (the device is on a tripod, so it sees the ground's shake at impact, nothing more).
public final class SyntheticIMUSource: IMUSource {
    public let rateHz: Int
    let script: SwingScript
    let startNs: Int64
    let total: Int64
    var index: Int64 = 0
    var rng = SplitMix64(seed: 7)

    public init(rateHz: Int, script: SwingScript, startNs: Int64 = 0, seconds: Double) {
        self.rateHz = rateHz
        self.script = script
        self.startNs = startNs
        self.total = Int64((seconds * Double(rateHz)).rounded())
    }

    public func next() throws -> IMUSample? {
        guard index < total else { return nil }
        let t = startNs + index * 1_000_000_000 / Int64(rateHz)
        index += 1
        var shake: Float = 0
        for i in script.impactsNs where t >= i && t < i + 50_000_000 {
            shake = 0.5 * expf(-Float(t - i) / 10_000_000)
        }
        let noise = SIMD3<Float>(rng.signedUnit(), rng.signedUnit(), rng.signedUnit()) * 0.01
        return IMUSample(
            timeNs: t, acceleration: SIMD3(0, 0, 9.81) + noise + SIMD3(0, shake, 0),
            rotationRate: noise * 0.1 + SIMD3(shake, 0, 0))
    }
}
