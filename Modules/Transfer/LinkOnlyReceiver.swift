import Checksum
import Foundation
import Link
import Syscall

/// The far end of a bulk channel that stores nothing: it answers offers from 0, verifies each chunk's XXH3 and the
/// whole file's, acknowledges each chunk, and confirms the clip as "not stored". Measures the link alone, as iperf3
/// measures the network; it is package-internal (only `ppc-tool bench link` uses it) because a host that confirms what it did not store must not
/// exist.
package final class LinkOnlyReceiver: @unchecked Sendable {
    // @unchecked: one connection at a time, served on its own thread.
    let listener: Listener
    package var port: Int { listener.port }
    let security: HostSecurity?

    /// `security`: encrypted links too, as a host takes them (nil: plaintext only).
    package init(host: String = "127.0.0.1", security: HostSecurity? = nil) throws {
        listener = try Listener(host: host, port: 0)
        self.security = security
    }
    package func stop() { listener.stop() }

    package func run() {
        while let c = listener.accept() {
            Thread { try? self.serve(c) }.start()
        }
    }

    func serve(_ c: Connection) throws(LinkError) {
        if let security { _ = try c.accept(as: security) }
        guard case .hello = try c.receive(timeoutNs: 5_000_000_000) else { return }
        try c.send(.helloAck(accepted: true, policy: "bench", reason: ""))
        c.configure(.bulk)
        ThreadPriority.lowerCurrent(nice: 19)
        ThreadPriority.confineToSpareCores()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: LinkMessage.maxChunkBytes, alignment: 64)
        defer { buffer.deallocate() }
        var size: UInt64 = 0
        var committed: UInt64 = 0
        let whole = XXH3.Hasher()
        var expected: UInt64 = 0
        var file = ""
        var clip = ""
        while true {
            let receipt: Connection.BulkReceipt
            do {
                receipt = try c.receive { (_, _, _) throws(LinkError) -> UnsafeMutableRawBufferPointer in buffer }
            } catch  where error.code == .closed { return }
            switch receipt {
            case .chunk(let offset, let sum, let compressed, let count):
                guard !compressed, offset == committed,
                    XXH3.hash(UnsafeRawBufferPointer(rebasing: buffer[0..<count])) == sum
                else {
                    throw LinkError(.malformed, "chunk at \(offset): not the next, compressed, or XXH3 mismatch")
                }
                whole.update(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
                committed += UInt64(count)
                try c.send(.chunkAck(committedOffset: committed))
                if committed == size {
                    let ok = whole.digest == expected
                    try c.send(
                        .fileComplete(
                            clipID: clip, file: file, verified: ok, reason: ok ? "" : "whole-file XXH3 mismatch"))
                }
            case .message(.offer(let clipID, let name, let s, let sum)):
                clip = clipID
                file = name
                size = s
                expected = sum
                committed = 0
                whole.reset()
                try c.send(.resumeAt(clipID: clipID, file: name, offset: 0))
            case .message(.clipDone(let clipID)):
                try c.send(.clipConfirmed(clipID: clipID, path: "(not stored: link-only bench)"))
            case .message(let m):
                throw LinkError(.protocolViolation, "\(m.name) on the bulk channel")
            }
        }
    }
}
