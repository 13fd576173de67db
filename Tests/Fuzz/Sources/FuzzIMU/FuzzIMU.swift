import Foundation
import FuzzDriver
import Glibc
import IMUFile
import Pipeline

/// A recorded IMU log as a user hands one to `file.imu` (a phone's export, a sensor board's, or any file at all). The
/// first byte picks the units and an offset; the rest is the file. Properties held for every input:
/// - `IMUFileSource` opens it or refuses it with an ``IMUFileError`` naming the file; reading to the end never traps
///   and ends at nil or such an error;
/// - every sample given is after the one before, within ±2^60 ns, at a rate of at most 10 000 Hz as measured, and
///   every figure finite and within the sensor bound (in the file's units, converted).
@_cdecl("FuzzIMU_main")
func fuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv)
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzIMU(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard size > 0 else { return 0 }
    let bytes = fuzzInput(data, size)
    let path = scratchFile(bytes.dropFirst(), name: "imu", ext: "csv")
    defer { unlink(path) }
    let pick = bytes[0]
    let offsets: [Int64] = [0, 5_000_000_000, -(1 << 60), 1 << 60]
    let source: IMUFileSource
    do {
        source = try IMUFileSource(
            path: path, offsetNs: offsets[Int(pick & 3)], acceleration: pick & 4 == 0 ? .metresPerSecondSquared : .g,
            rotation: pick & 8 == 0 ? .radiansPerSecond : .degreesPerSecond)
    } catch let e as IMUFileError {
        precondition(e.description.hasPrefix(path), "a refusal that does not name the file: \(e)")
        return 0
    } catch { preconditionFailure("not an IMUFileError: \(error)") }
    precondition((1...IMUFileSource.maxRateHz).contains(source.rateHz), "rate \(source.rateHz) Hz")
    let bound = Float(IMUFileSource.maxMagnitude * IMUFileSource.standardGravity) * 1.0001
    var last = Int64.min
    do {
        while let s = try source.next() {
            precondition(s.timeNs > last && abs(s.timeNs) <= IMUFileSource.maxTimeNs, "time \(s.timeNs) after \(last)")
            last = s.timeNs
            for v in [
                s.acceleration.x, s.acceleration.y, s.acceleration.z, s.rotationRate.x, s.rotationRate.y,
                s.rotationRate.z,
            ] {
                precondition(v.isFinite && abs(v) <= bound, "figure \(v)")
            }
        }
    } catch let e as IMUFileError {
        precondition(e.description.hasPrefix(path), "a refusal that does not name the file: \(e)")
    } catch { preconditionFailure("not an IMUFileError: \(error)") }
    return 0
}
