import Foundation
import FragmentRing
import Glibc

/// A fresh directory under /tmp, removed when the value is dropped.
public final class TemporaryDirectory: @unchecked Sendable {
    // @unchecked: immutable after init.
    public let path: String

    public init(_ label: String = "ppc") {
        var template = Array("/tmp/\(label)-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed: errno \(errno)")
        path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    public func sub(_ name: String) -> String { "\(path)/\(name)" }
}

/// Deterministic fragment bytes for sequence `seq`: every byte derived from it, so a mix-up shows.
public func fragmentBytes(_ seq: UInt64, size: Int) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: size)
    var x = seq &* 0x9E37_79B9_7F4A_7C15 | 1
    for i in 0..<size {
        x ^= x << 13
        x ^= x >> 7
        x ^= x << 17
        out[i] = UInt8(truncatingIfNeeded: x)
    }
    return out
}

/// Reserves, writes and publishes one fragment covering [startNs, startNs + durationNs).
@discardableResult
public func publishFragment(
    _ ring: FragmentRing, startNs: Int64, durationNs: Int64 = 500_000_000, size: Int = 4096, keyframe: Bool = true,
    frames: UInt32 = 60
) throws -> PublishOutcome {
    var r = try ring.reserve()
    let bytes = fragmentBytes(r.sequence.rawValue, size: size)
    try bytes.withUnsafeBytes { try r.write($0) }
    return try ring.publish(
        r,
        FragmentTiming(startNs: startNs, endNs: startNs + durationNs, frameCount: frames, startsWithKeyframe: keyframe, codec: .opaque))
}

/// The fragment an outcome published (test convenience).
public extension PublishOutcome {
    var published: FragmentInfo? {
        if case .published(let f, _) = self { return f }
        return nil
    }
}
