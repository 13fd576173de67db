import Checksum
import Foundation
import FuzzDriver
import Glibc
import Transfer

@testable import Link

/// The host's bulk channel fed a device's messages in any order: offers of any name and size, chunks right and wrong,
/// clip_done early or twice, junk between. The input is read as a list of operations, so most runs reach deep into the
/// transfer state machine instead of stopping at the first malformed byte. Properties held for every input:
/// - `HostStore.serve` never traps; it returns (the device closed) or throws a ``LinkError`` naming why;
/// - a confirmed clip holds only bundle files (and host-meta.json), and each file's bytes are exactly the bytes of one
///   offer made for that clip and file — never torn, never zeros, never another clip's.
@_cdecl("FuzzHost_main")
func fuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv)
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzHost(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var r = Reader(fuzzInput(data, size))
    let library = scratchPath("host")
    defer { try? FileManager.default.removeItem(atPath: library) }
    guard let store = try? HostStore(library: library) else { return 0 }

    let clips = ["s-001", "s-002", "../up", "s-001"]
    let files = ["clip.mp4", "audio.wav", "meta.json", "index.bin", "clip.mp4.state", "host-meta.json"]
    var offeredHashes: [String: Set<UInt64>] = [:]  // "clip/file" → the XXH3 of every offer made
    var frames: [UInt8] = []
    var current: (content: [UInt8], at: Int)?
    var ops = 0
    while let op = r.u8(), ops < 48 {
        ops += 1
        switch op % 7 {
        case 0, 1:
            let clip = clips[Int(r.u8() ?? 0) % clips.count]
            let file = files[Int(r.u8() ?? 0) % files.count]
            let content = r.take(Int(r.u8() ?? 0) * 16)
            let lie = r.u8() ?? 0
            let size: UInt64 = lie == 0xFF ? UInt64(1) << 63 : lie == 0xFE ? .max : UInt64(content.count)
            let sum = lie == 0xFD ? XXH3.hash([1]) : XXH3.hash(content)
            offeredHashes["\(clip)/\(file)", default: []].insert(sum)
            frames += LinkMessage.offer(clipID: clip, file: file, size: size, xxh3: sum).encoded()
            current = (content, 0)
        case 2, 3:
            // The next chunk of the current file: its bytes and hash right, unless the input says otherwise.
            guard var c = current else { continue }
            let n = max(1, min(c.content.count - c.at, Int(r.u8() ?? 1) * 8))
            let how = r.u8() ?? 0
            let offset = how & 1 == 1 ? UInt64(r.u8() ?? 0) : UInt64(c.at)
            var part = c.content.count > c.at ? Array(c.content[c.at..<(c.at + n)]) : [0]
            let sum = XXH3.hash(part)
            if how & 2 == 2, !part.isEmpty { part[0] ^= 0xFF }  // the bytes no longer match their hash
            frames += LinkMessage.chunk(offset: offset, xxh3: sum, compressed: how & 4 == 4, data: part).encoded()
            c.at += n
            current = c
        case 4:
            frames += LinkMessage.clipDone(clipID: clips[Int(r.u8() ?? 0) % clips.count]).encoded()
        case 5:
            frames += r.take(Int(r.u8() ?? 0) % 24)  // junk between frames
        default:
            frames += LinkMessage.heartbeat(sequence: 1, deviceTimeNs: 2).encoded()  // a control message on bulk
        }
    }

    var fds: [Int32] = [0, 0]
    guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else { return 0 }
    var size = Int32(4 << 20)
    setsockopt(fds[1], SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    setsockopt(fds[0], SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    _ = frames.withUnsafeBytes { send(fds[1], $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
    shutdown(fds[1], Int32(SHUT_WR))
    let host = Connection(fd: fds[0], peer: "fuzz")
    _ = try? store.serve(host, device: "bay-3", clockNote: { [:] })
    close(fds[1])

    // What was confirmed is exactly what was offered.
    let device = "\(library)/bay-3"
    for clip in ((try? FileManager.default.contentsOfDirectory(atPath: device)) ?? []) where !clip.hasPrefix(".") {
        for file in (try? FileManager.default.contentsOfDirectory(atPath: "\(device)/\(clip)")) ?? []
        where file != "host-meta.json" {
            precondition(HostStore.bundleFiles.contains(file), "confirmed clip \(clip) holds \(file)")
            let bytes = [UInt8]((try? Data(contentsOf: URL(fileURLWithPath: "\(device)/\(clip)/\(file)"))) ?? Data())
            precondition(
                offeredHashes["\(clip)/\(file)"]?.contains(XXH3.hash(bytes)) == true,
                "\(clip)/\(file) holds bytes no offer made")
        }
    }
    return 0
}

/// Reads a fuzz input front to back; runs out quietly.
struct Reader {
    let bytes: [UInt8]
    var at = 0
    init(_ bytes: [UInt8]) { self.bytes = bytes }
    mutating func u8() -> UInt8? {
        guard at < bytes.count else { return nil }
        defer { at += 1 }
        return bytes[at]
    }
    mutating func take(_ n: Int) -> [UInt8] {
        let end = min(bytes.count, at + max(0, n))
        defer { at = end }
        return Array(bytes[at..<end])
    }
}
