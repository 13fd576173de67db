import Foundation
import FragmentRing
import Glibc
import Synthetic
import TestSupport
import Testing

/// CrashSafety: a process writing the ring is killed (SIGKILL) at random points, many times over. Every reopen finds
/// only whole, checksum-valid fragments, and a sequence that never goes back.
///
/// The child is `ppc-tool ring fill`, which prints `published SEQ` once SEQ is durable and is already writing the next
/// fragment (in 16 chunks) when the kill lands: the kill falls mid-write, mid-commit or mid-recycle as it happens.
@Suite("CrashSafety")
struct CrashSafety {
    /// Starts the writer, reads `lines` of its output, kills it; returns the last sequence it reported durable.
    static func killAfter(lines: Int, dir: String, durability: String) throws -> UInt64? {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: ToolRunner.executable())
        p.arguments = [
            "ring", "fill", dir, "--count", "100000", "--bytes", "24000", "--capacity", "6", "--chunks", "16",
            "--durability", durability,
        ]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let fd = out.fileHandleForReading.fileDescriptor
        var seen = 0
        var last: UInt64?
        var pending = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        reading: while seen < lines {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            pending += buffer[0..<n]
            while let nl = pending.firstIndex(of: 10) {
                let line = String(decoding: pending[..<nl], as: UTF8.self)
                pending.removeSubrange(...nl)
                if line.hasPrefix("published "), let s = UInt64(line.dropFirst(10)) {
                    last = s
                    seen += 1
                    if seen >= lines { break reading }
                }
            }
        }
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
        return last
    }

    @Test func killedAtRandomPointsManyTimes() throws {
        let tmp = TemporaryDirectory()
        let seed = UInt64(ProcessInfo.processInfo.environment["PPC_SPEC_SEED"] ?? "") ?? 20_261_130
        var rng = SplitMix64(seed: seed)
        var highest: UInt64 = 0
        let rounds = 40
        for round in 0..<rounds {
            let k = Int.random(in: 1...12, using: &rng)
            let durability = round % 4 == 0 ? "fsync" : "none"
            let reported = try Self.killAfter(lines: k, dir: tmp.path, durability: durability)
            let said = "round \(round), seed \(seed), killed after \(k) publishes (\(durability))"

            // Reopen exactly as the next session would.
            let ring = try FragmentRing(directory: tmp.path, configuration: .init(capacity: 6, durability: .none))
            let latest = try #require(ring.latestSequence, "\(said): nothing survived")
            if let reported {
                #expect(
                    !(SequenceNumber(latest.rawValue) < SequenceNumber(reported)),
                    "\(said): latest \(latest) < reported \(reported)")
            }
            #expect(latest.rawValue >= highest, "\(said): the sequence went back from \(highest) to \(latest)")
            highest = latest.rawValue
            #expect(ring.fragments.count <= 6)
            for f in ring.fragments {
                let bytes = try ring.read(f.handle)  // checks length and XXH3
                #expect(
                    bytes == fragmentBytes(f.sequence.rawValue, size: 24000),
                    "\(said): fragment \(f.sequence) is not whole")
            }
            // After recovery the directory holds nothing untrusted.
            let scan = try FragmentRing.scan(directory: tmp.path)
            #expect(scan.problems.isEmpty, "\(said): \(scan.problems)")
            #expect(
                ring.recovery.rejected.allSatisfy { $0.reason.hasPrefix("orphan") },
                "\(said): \(ring.recovery.rejected)")
        }
        #expect(highest > UInt64(rounds))
    }
}
