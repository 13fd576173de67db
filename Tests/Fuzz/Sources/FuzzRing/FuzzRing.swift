import Foundation
import FragmentRing
import FuzzDriver
import Glibc

/// A ring directory damaged any way a crash, a bad disk or a careless hand can: the input is a list of edits (overwrite,
/// cut, extend, delete, add a file) to a small ring's ring.json, index.log and fragment files. Properties held for every
/// input:
/// - `FragmentRing.scan` (what `ring verify` runs) never traps: it reads the ring or refuses it naming the file;
/// - opening the ring (what the next run does) never traps, and what it keeps is whole: every fragment it lists has its
///   recorded size, and a scan right after finds nothing left to discard — for a plain ring and for a session's, whose
///   pinned fragments are kept beside its window.
@_cdecl("FuzzRing_main")
func fuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv)
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzRing(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = fuzzInput(data, size)[...]
    let dir = scratchPath("ring")
    try? FileManager.default.removeItem(atPath: dir)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    // An odd first byte (read, not consumed: the seeds keep their meaning) makes the ring a session's: fragment 1 pinned
    // and kept beside a window of 3 (`.keepPinnedBeside`), so damage meets a ring holding more than its capacity.
    let beside = (input.first ?? 0) & 1 == 1
    let config = FragmentRing.Configuration(
        capacity: 3, durability: .none, whenOnlyPinnedRemain: beside ? .keepPinnedBeside : .refuse, fileExtension: "ts")
    do {
        let ring = try FragmentRing(directory: dir, configuration: config)
        for k in 0..<4 {
            if beside && k == 1 { _ = try ring.pin(from: SequenceNumber(1), through: SequenceNumber(1)) }
            var r = try ring.reserve()
            let bytes = [UInt8](repeating: UInt8(k), count: 64 + k)
            try bytes.withUnsafeBytes { try r.write($0) }
            _ = try ring.publish(
                r,
                FragmentTiming(
                    startNs: Int64(k) * 500, endNs: Int64(k + 1) * 500, frameCount: 1, startsWithKeyframe: true,
                    codec: .opaque))
        }
    } catch {
        return 0
    }
    // Edits: [target, kind, offset, length, bytes…]
    let targets = [
        "ring.json", "index.log", "fragments/0000000000000002.ts", "fragments/0000000000000004.ts",
        "fragments/0000000000000009.ts", "fragments/x",
    ]
    while input.count >= 4 {
        let target = "\(dir)/\(targets[Int(input.removeFirst()) % targets.count])"
        let kind = input.removeFirst() % 5
        let offset = Int(input.removeFirst()) * 4
        let count = Int(input.removeFirst())
        let bytes = Array(input.prefix(count))
        input = input.dropFirst(bytes.count)
        var content = [UInt8]((try? Data(contentsOf: URL(fileURLWithPath: target))) ?? Data())
        switch kind {
        case 0:  // overwrite
            for (i, b) in bytes.enumerated() where offset + i < content.count { content[offset + i] = b }
        case 1: content = Array(content.prefix(offset))  // cut
        case 2: content += bytes  // extend
        case 3:
            try? FileManager.default.removeItem(atPath: target)
            continue
        default: content = bytes  // replace
        }
        FileManager.default.createFile(atPath: target, contents: Data(content))
    }
    _ = try? FragmentRing.scan(directory: dir, verifyChecksums: true)
    guard let opened = try? FragmentRing(directory: dir, configuration: config) else { return 0 }
    let kept = opened.fragments
    guard let after = try? FragmentRing.scan(directory: dir, verifyChecksums: true) else {
        fatalError("an opened ring no longer scans")
    }
    precondition(
        after.rejected.isEmpty && after.tornTailBytes == 0,
        "opening left \(after.rejected) and \(after.tornTailBytes) torn bytes")
    for f in kept {
        let path = "\(dir)/fragments/\(f.sequence.hex).ts"
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value
        precondition(
            size == f.byteLength, "kept fragment \(f.sequence) is \(size ?? -1) bytes, its record says \(f.byteLength)")
    }
    return 0
}
