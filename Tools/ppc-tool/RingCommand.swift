import CLI
import Foundation
import FragmentRing
import Syscall

/// `ppc-tool ring inspect|verify|fill`: look into a FragmentRing directory.
enum RingCommand {
    static let command = Command(
        "ring", abstract: "Inspect, verify or fill a fragment ring on disk.",
        subcommands: [
            Command(
                "inspect", abstract: "List a ring's fragments, pins and any problems (changes nothing).",
                options: [jsonFlag], arguments: [Argument("dir", help: "The ring directory.")], run: inspect),
            Command(
                "verify",
                abstract:
                    "Check every fragment's checksum, the index and ring.json; exit 0 clean, 75 when only a crash's leftovers remain (the next run repairs them), 65 naming each real problem.",
                options: [jsonFlag], arguments: [Argument("dir", help: "The ring directory.")], run: verify),
            Command(
                "fill",
                abstract: "Write synthetic fragments into a ring, printing 'published SEQ' as each becomes durable.",
                options: [
                    .value("count", "n", help: "Fragments to write (default 10)."),
                    .value("bytes", "n", help: "Bytes per fragment (default 65536)."),
                    .value("capacity", "n", help: "Ring capacity (default 20)."),
                    .value("chunks", "n", help: "Writes per fragment (default 8)."),
                    .value("durability", "fsync|none", help: "Durability policy (default fsync)."),
                ],
                arguments: [Argument("dir", help: "The ring directory (created if absent).")], run: fill),
        ])

    static func scan(_ path: String, verify: Bool) throws -> RingScan {
        do {
            return try FragmentRing.scan(directory: path, verifyChecksums: verify)
        } catch {
            throw CommandFailure.dataError(error.message)
        }
    }

    static func inspect(_ inv: Invocation) throws -> ExitCode {
        let dir = inv.argument(0)!
        let scan = try scan(dir, verify: false)
        if inv.flag("json") {
            try printJSON(json(scan, dir: dir))
            return .success
        }
        Terminal.out(
            "\(dir): generation \(scan.generation), \(scan.fragments.count) fragments, \(scan.pins.count) pins")
        for f in scan.fragments {
            let pins = scan.pins.filter { !(f.sequence < $0.first) && !($0.last < f.sequence) }.map { String($0.id) }
            Terminal.out(
                "  \(f.sequence)  [\(f.startNs), \(f.endNs)) ns  \(f.frameCount) frames  \(f.startsWithKeyframe ? "key" : "   ")  \(f.codec)  \(f.byteLength) B  xxh3 \(f.checksumHex)\(pins.isEmpty ? "" : "  pinned by \(pins.joined(separator: ","))")"
            )
        }
        for p in scan.problems { Terminal.out("  problem: \(p)") }
        return .success
    }

    static func json(_ scan: RingScan, dir: String) -> [String: Any] {
        [
            "directory": dir, "generation": scan.generation,
            "fragments": scan.fragments.map { f in
                [
                    "path": "\(dir)/fragments/\(f.sequence.hex).\(extensionOf(dir, f) ?? "bin")",
                    "sequence": f.sequence.rawValue, "generation": f.generation, "startNs": f.startNs, "endNs": f.endNs,
                    "frameCount": f.frameCount, "keyframe": f.startsWithKeyframe, "codec": f.codec.description,
                    "bytes": f.byteLength, "checksum": f.checksumHex,
                    "pins": scan.pins.filter { !(f.sequence < $0.first) && !($0.last < f.sequence) }.map(\.id),
                ] as [String: Any]
            },
            "pins": scan.pins.map { ["id": $0.id, "first": $0.first.rawValue, "last": $0.last.rawValue] },
            "problems": scan.problems,
        ]
    }

    static func extensionOf(_ dir: String, _ f: FragmentInfo) -> String? {
        (try? FileSystem.list("\(dir)/fragments"))?.first { $0.hasPrefix(f.sequence.hex + ".") }.map {
            String($0.dropFirst(17))
        }
    }

    static func verify(_ inv: Invocation) throws -> ExitCode {
        let dir = inv.argument(0)!
        let scan = try scan(dir, verify: true)
        if inv.flag("json") {
            try printJSON([
                "directory": dir, "clean": scan.problems.isEmpty && scan.recoverable.isEmpty,
                "fragments": scan.fragments.count,
                "problems": scan.problems, "recoverable": scan.recoverable,
            ])
        } else {
            for p in scan.problems { Terminal.err("bad: \(p)") }
            for r in scan.recoverable { Terminal.out("recoverable: \(r)") }
            if scan.problems.isEmpty && scan.recoverable.isEmpty {
                Terminal.out("\(dir): \(scan.fragments.count) fragments, every checksum valid, index clean")
            } else if scan.problems.isEmpty {
                Terminal.out(
                    "\(dir): \(scan.fragments.count) fragments intact; what a crash left behind is listed above, and the next run on this ring discards it"
                )
            }
        }
        if !scan.problems.isEmpty { return .dataError }
        return scan.recoverable.isEmpty ? .success : .recoverable
    }

    static func fill(_ inv: Invocation) throws -> ExitCode {
        let dir = inv.argument(0)!
        let count = try inv.parsed("count", in: 0...1_000_000) ?? 10
        let bytes = try inv.parsed("bytes", in: 1...(256 << 20)) ?? 65_536
        let capacity = try inv.parsed("capacity", in: 1...100_000) ?? 20
        let chunks = try inv.parsed("chunks", in: 1...1024) ?? 8
        guard let durability = FragmentRing.Durability(rawValue: inv.value("durability") ?? "fsync") else {
            throw CommandFailure.usage("--durability '\(inv.value("durability")!)': expected fsync or none")
        }
        guard count >= 0, bytes > 0, capacity > 0 else {
            throw CommandFailure.usage("--count, --bytes and --capacity must be positive")
        }
        let ring: FragmentRing
        do {
            ring = try FragmentRing(directory: dir, configuration: .init(capacity: capacity, durability: durability))
        } catch {
            throw CommandFailure.dataError(error.message)
        }
        var t = ring.fragments.last?.endNs ?? 0
        let duration: Int64 = 500_000_000
        var payload = [UInt8](repeating: 0, count: bytes)
        for _ in 0..<count {
            var r = try ring.reserve()
            // Bytes derived from the sequence, so a later check can tell fragments apart.
            var x = r.sequence.rawValue &* 0x9E37_79B9_7F4A_7C15 | 1
            for i in 0..<bytes {
                x ^= x << 13
                x ^= x >> 7
                x ^= x << 17
                payload[i] = UInt8(truncatingIfNeeded: x)
            }
            let step = (bytes + chunks - 1) / chunks
            try payload.withUnsafeBytes { all in
                var off = 0
                while off < bytes {
                    try r.write(UnsafeRawBufferPointer(rebasing: all[off..<min(bytes, off + step)]))
                    off += step
                }
            }
            let outcome = try ring.publish(
                r,
                FragmentTiming(
                    startNs: t, endNs: t + duration, frameCount: 60, startsWithKeyframe: true, codec: .opaque))
            switch outcome {
            case .published(let f, _): Terminal.out("published \(f.sequence)")
            case .noop(let reason), .refused(let reason): Terminal.err("not published: \(reason)")
            }
            t += duration
        }
        return .success
    }
}
