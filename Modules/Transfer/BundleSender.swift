import Checksum
import Compression
import Foundation
import Glibc
import Link
import Syscall

/// The device's side: sends one bundle over the bulk channel, resuming where the host says, one file at a time.
public enum BundleSender {
    public struct Report: Sendable {
        public var remotePath: String
        public var bytesSent: Int
        public var chunksSent: Int
        /// Where the host said each file resumed (0: from the start; the size: already whole there).
        public var resumedAt: [String: UInt64] = [:]
        /// Time spent paused because policy asked transfers to yield, ns.
        public var pausedNs: Int64 = 0
        /// The chunk size this send used (a cut resends at most one chunk of it).
        public var chunkBytes = 0
    }

    /// What a send has done so far, readable after it throws (a cut transfer says how far it got).
    public final class Progress: @unchecked Sendable {
        // @unchecked: written by the sending thread, read after `send` returns or throws.
        public internal(set) var report = Report(remotePath: "", bytesSent: 0, chunksSent: 0)
        public init() {}
    }

    /// Files whose bytes compress (audio, metadata, the timeline) go zstd-compressed; video does not.
    static func compressible(_ name: String) -> Bool {
        name.hasSuffix(".wav") || name.hasSuffix(".json") || name.hasSuffix(".bin")
    }

    /// The chunk size when the sending thread runs off a core kept free for control (two or more cores): 1 MiB.
    /// Measured 2026-11-30 (`bench link`, release, this 2-core VM): the link alone moved 994 MB/s with 1 MiB chunks
    /// against 475–490 MB/s with 64 KiB (a chunk waits for its ack, so the fixed cost of a round trip is spread over more
    /// bytes), and control p99 under it stayed 116–233 µs, because the copying happens on the other core. A cut resends
    /// at most this one chunk.
    public static let chunkBytesOnSpareCores = 1 << 20

    /// The chunk size when bulk must share every core (one core allowed): 64 KiB. There a chunk's kernel copy delays
    /// control directly: unconfined 1 MiB chunks measured control p99 906–1137 µs under bulk, 64 KiB chunks 277–321 µs.
    public static let chunkBytesSharingCores = 64 << 10

    /// Bytes that may be unacknowledged: by default one chunk (stop-and-wait), so a cut resends at most that one chunk.
    /// Measured 2026-11-30 (`bench link --chunk-kib 256 --window-kib 256|1024`): a 1 MiB window of 256 KiB chunks moved
    /// no more bytes here (181–206 against 178–198 MB/s, the disk is the bound) and control p99 under bulk was alike;
    /// 1 MiB stop-and-wait chunks raised control p99 under bulk to 1.4–2.9 ms. A caller may pass a wider window.
    public static let windowBytes = 0

    /// Sends `directory` as clip `clipID`; returns once the host confirms the verified whole.
    /// `budget` bytes may be sent per `tickNs` (link.payloadPumpBudgetBytes per link.pumpTickIntervalNs).
    ///
    /// Each answer from the host (resume offset, chunk ack, verdict, confirmation) must come within `answerTimeoutNs`, or
    /// the send fails as a dead peer (a host that hangs does not hang the device). At most one chunk (or `windowBytes`)
    /// is unacknowledged, so a cut resends at most one chunk; `chunkBytes` nil chooses by where the thread may run
    /// (``chunkBytesOnSpareCores`` or ``chunkBytesSharingCores``). The file is mapped for hashing; each uncompressed
    /// chunk leaves by sendfile, not copied on this side at all, and is verified in the host's buffer before one pwrite
    /// (compressed chunks: one sendmsg from their buffer). The calling thread is lowered in priority, kept off one core and has
    /// SIGPIPE blocked, for good (bulk yields to control and capture): call it on a transfer thread.
    public static func send(
        directory: String, clipID: String, over bulk: Connection, chunkBytes: Int? = nil, budget: Int = 4 << 20,
        tickNs: Int64 = 100_000_000, progress: Progress = Progress(), answerTimeoutNs: Int64 = 30_000_000_000,
        shouldPause: (() -> Bool)? = nil, pauseLimitNs: Int64 = .max, windowBytes: Int = BundleSender.windowBytes
    ) throws -> Report {
        ThreadPriority.lowerCurrent(nice: 19)
        let confined = ThreadPriority.confineToSpareCores().confined
        let chunkBytes = min(
            chunkBytes ?? (confined ? Self.chunkBytesOnSpareCores : Self.chunkBytesSharingCores),
            LinkMessage.maxChunkBytes)
        progress.report.chunkBytes = chunkBytes
        let compressor = ZstdCompressor(level: 3)
        var tickStart = monotonicNowNs()
        var sentThisTick = 0
        // A slot per chunk that can be in flight, plus one being prepared, for compressed chunks; uncompressed chunks
        // leave from the file's mapping itself.
        let slotBytes = ZstdCompressor.bound(chunkBytes)
        let windowBytes = max(chunkBytes, windowBytes)
        let packed = (0...(windowBytes / chunkBytes)).map { _ in
            UnsafeMutableRawBufferPointer.allocate(byteCount: slotBytes, alignment: 64)
        }
        defer { for b in packed { b.deallocate() } }

        struct Prepared {
            var offset: Int
            var end: Int
            var sum: UInt64
            var compressed: Bool
            var payload: UnsafeRawBufferPointer
        }

        let names = try FileSystem.list(directory).sorted()
        if let stray = names.first(where: { !HostStore.bundleFiles.contains($0) }) {
            throw LinkError(
                .refused,
                "\(directory) is not a clip bundle: it holds '\(stray)' (a bundle holds only \(HostStore.bundleFiles.sorted().joined(separator: ", ")))"
            )
        }
        for name in names {
            let path = "\(directory)/\(name)"
            let fd = try FileDescriptor.open(path, O_RDONLY)
            let size = Int(try fd.size())
            let map = try FileMapping(fd, length: size, writable: false)
            let file = UnsafeRawBufferPointer(map.bytes)
            try bulk.send(.offer(clipID: clipID, file: name, size: UInt64(size), xxh3: XXH3.hash(file)))
            let start: UInt64
            switch try bulk.receive(timeoutNs: answerTimeoutNs) {
            case .resumeAt(_, _, let at):
                guard at <= UInt64(size) else {
                    throw LinkError(
                        .protocolViolation, "the host said \(name) resumes at \(at), past its \(size) bytes")
                }
                start = at
            case .fileComplete(_, _, false, let reason): throw LinkError(.refused, reason)  // the clip stays queued
            default: throw LinkError(.protocolViolation, "expected resume_at for \(name)")
            }
            progress.report.resumedAt[name] = start
            var offset = Int(start)
            if offset >= size { continue }  // the host has it whole already

            func prepare(_ slot: Int, at offset: Int) throws -> Prepared {
                let end = min(size, offset + chunkBytes)
                let part = UnsafeRawBufferPointer(rebasing: file[offset..<end])
                let sum = XXH3.hash(part)
                if compressible(name) {
                    let n = try compressor.compress(part, into: packed[slot])
                    if n < part.count {
                        return Prepared(
                            offset: offset, end: end, sum: sum, compressed: true,
                            payload: UnsafeRawBufferPointer(rebasing: packed[slot][0..<n]))
                    }
                }
                return Prepared(offset: offset, end: end, sum: sum, compressed: false, payload: part)
            }

            // Chunks go out while at most `windowBytes` are unacknowledged; each acknowledgement frees room for the
            // next. The host writes chunk k while k+1… are on the wire.
            var inFlight: [Prepared] = []
            var inFlightBytes = 0
            var slot = 0
            func awaitAck() throws {
                let oldest = inFlight.removeFirst()
                inFlightBytes -= oldest.end - oldest.offset
                guard case .chunkAck(let committed) = try bulk.receive(timeoutNs: answerTimeoutNs),
                    committed == UInt64(oldest.end)
                else {
                    throw LinkError(.protocolViolation, "expected chunk_ack at \(oldest.end) of \(name)")
                }
            }
            while offset < size {
                // Policy may ask transfers to yield (heat): wait a tick at a time between chunks; the host keeps what
                // it has, and the transfer goes on from here.
                while shouldPause?() == true {
                    guard progress.report.pausedNs < pauseLimitNs else {
                        throw LinkError(
                            .yielded,
                            String(
                                format:
                                    "%@ paused %.1f s at byte %d of %@ while policy asked transfers to yield; it resumes from there later",
                                clipID, Double(progress.report.pausedNs) / 1e9, offset, name))
                    }
                    progress.report.pausedNs += tickNs
                    sleepNs(tickNs)
                }
                let chunk = try prepare(slot, at: offset)
                slot = (slot + 1) % packed.count
                while !inFlight.isEmpty && inFlightBytes + (chunk.end - chunk.offset) > windowBytes { try awaitAck() }
                // Pace: no more than `budget` bytes per tick (transfer yields; capture degrades last).
                if sentThisTick + chunk.payload.count > budget {
                    let wait = tickStart + tickNs - monotonicNowNs()
                    if wait > 0 {
                        sleepNs(wait)
                    }
                    tickStart = monotonicNowNs()
                    sentThisTick = 0
                }
                if chunk.compressed {
                    try bulk.sendChunk(
                        offset: UInt64(chunk.offset), xxh3: chunk.sum, compressed: true, data: chunk.payload)
                } else {
                    try bulk.sendChunk(
                        offset: UInt64(chunk.offset), xxh3: chunk.sum, file: fd.rawValue, at: chunk.offset,
                        count: chunk.end - chunk.offset)
                }
                inFlight.append(chunk)
                inFlightBytes += chunk.end - chunk.offset
                sentThisTick += chunk.payload.count
                progress.report.bytesSent += chunk.payload.count
                progress.report.chunksSent += 1
                offset = chunk.end
            }
            while !inFlight.isEmpty { try awaitAck() }
            guard case .fileComplete(_, _, let verified, let reason) = try bulk.receive(timeoutNs: answerTimeoutNs)
            else {
                throw LinkError(.protocolViolation, "expected file_complete for \(name)")
            }
            guard verified else { throw LinkError(.protocolViolation, "host could not verify \(name): \(reason)") }
        }
        try bulk.send(.clipDone(clipID: clipID))
        guard case .clipConfirmed(_, let path) = try bulk.receive(timeoutNs: answerTimeoutNs) else {
            throw LinkError(.protocolViolation, "expected clip_confirmed for \(clipID)")
        }
        progress.report.remotePath = path
        return progress.report
    }
}

/// The device's side of a first look: one small file sent whole over the bulk channel between clips, ahead of them.
/// Never resumed or retried — a first look is worth only its speed, and the clip follows in seconds.
public enum LookSender {
    /// Sends `path` (a first look at clip `clipID`, its t0 and first frame on the capture clock) and waits for the host
    /// to store it; throws with the host's reason when it did not.
    public static func send(
        path: String, clipID: String, t0Ns: Int64, zeroNs: Int64, over bulk: Connection,
        answerTimeoutNs: Int64 = 5_000_000_000
    ) throws {
        let fd = try FileDescriptor.openRegularFile(path)
        let size = Int(try fd.status().st_size)
        guard size > 0, UInt64(size) <= HostStore.maxLookBytes else {
            throw LinkError(.oversize, "\(path): \(size) bytes is no first look")
        }
        let mapping = try FileMapping(fd, length: size, writable: false)
        let bytes = UnsafeRawBufferPointer(mapping.bytes)
        try bulk.send(
            .lookOffer(clipID: clipID, t0Ns: t0Ns, zeroNs: zeroNs, size: UInt64(size), xxh3: XXH3.hash(bytes)))
        var offset = 0
        while offset < size {
            let end = min(size, offset + BundleSender.chunkBytesOnSpareCores)
            try bulk.sendChunk(
                offset: UInt64(offset), xxh3: XXH3.hash(UnsafeRawBufferPointer(rebasing: bytes[offset..<end])),
                file: fd.rawValue, at: offset,
                count: end - offset)
            guard case .chunkAck(let committed) = try bulk.receive(timeoutNs: answerTimeoutNs), committed == UInt64(end)
            else {
                throw LinkError(.protocolViolation, "expected chunk_ack \(end) of the first look of \(clipID)")
            }
            offset = end
        }
        guard case .lookStored(_, let stored, let reason) = try bulk.receive(timeoutNs: answerTimeoutNs) else {
            throw LinkError(.protocolViolation, "expected look_stored for \(clipID)")
        }
        guard stored else { throw LinkError(.refused, "the host did not keep the first look of \(clipID): \(reason)") }
    }
}
