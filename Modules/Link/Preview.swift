import Foundation
import Glibc
import Synchronization
import Syscall

/// The device's optional live preview: the newest frame's luma, downscaled, on a channel of its own. Live only: one
/// slot, never a queue. The capture thread offers a frame at most `fps` times a second and never waits — if the
/// sender is busy with the slot the frame is shed; the sender sends only when the socket can take a frame now, and
/// sheds it otherwise, so a slow link shows an older picture or none ("absent"), never a backlog.
public final class PreviewSender: @unchecked Sendable {
    // @unchecked: the slot and its fields are under `slotLock`; counters are atomic; the connection is the sender's.
    let connection: Connection
    public let width: Int
    let intervalNs: Int64
    let slotLock = NSLock()
    var slot: [UInt8]
    var slotWidth = 0
    var slotHeight = 0
    var slotIndex: UInt64 = 0
    var slotTimeNs: Int64 = 0
    var fresh = false
    var lastOfferNs: Int64?
    let wake = DispatchSemaphore(value: 0)
    let stopping = Atomic<Bool>(false)
    let sentCount = Atomic<Int>(0)
    let shedCount = Atomic<Int>(0)

    /// Connects the preview channel and says hello; throws when the host refuses or cannot be reached.
    public init(
        host: String, port: Int, deviceID: String, captureProfile: String, fps: Double, width: Int = 160,
        security: DeviceSecurity? = nil,
        connectTimeoutNs: Int64 = Connection.connectTimeoutNs
    ) throws(LinkError) {
        connection = try Connection.connect(
            host: host, port: port, channel: .preview, attempts: 3, timeoutNs: connectTimeoutNs)
        if let security { try connection.secure(as: security, channel: .preview) }
        try connection.send(
            .hello(protocolVersion: 1, deviceID: deviceID, channel: .preview, captureProfile: captureProfile))
        guard case .helloAck(true, _, let reason) = try connection.receive(timeoutNs: 5_000_000_000) else {
            throw LinkError(.refused, "the host refused the preview channel")
        }
        _ = reason
        self.width = width & ~1
        intervalNs = Int64(1e9 / max(0.1, fps))
        slot = [UInt8](repeating: 0, count: LinkMessage.maxPreviewPixels)
        Thread { [self] in run() }.start()
    }

    public var sent: Int { sentCount.load(ordering: .relaxed) }
    /// Frames offered but not sent: the sender was busy, or the link could not take them at once.
    public var shed: Int { shedCount.load(ordering: .relaxed) }

    /// Capture thread: takes at most one frame per interval, downscaled (point-sampled) into the slot. Never blocks.
    public func offer(
        luma: UnsafePointer<UInt8>, stride: Int, width fw: Int, height fh: Int, index: Int64, timeNs: Int64
    ) {
        if let last = lastOfferNs, timeNs - last < intervalNs { return }
        guard fw > 0, fh > 0 else { return }
        lastOfferNs = timeNs
        guard slotLock.try() else {
            shedCount.add(1, ordering: .relaxed)
            return
        }
        let w = min(width, fw)
        var h = max(2, (fh * w / fw) & ~1)
        if w * h > LinkMessage.maxPreviewPixels { h = LinkMessage.maxPreviewPixels / w }
        if fresh { shedCount.add(1, ordering: .relaxed) }  // the previous one never left
        slot.withUnsafeMutableBufferPointer { dst in
            for y in 0..<h {
                let row = luma + (y * fh / h) * stride
                for x in 0..<w { dst[y * w + x] = row[x * fw / w] }
            }
        }
        slotWidth = w
        slotHeight = h
        slotIndex = UInt64(max(0, index))
        slotTimeNs = timeNs
        fresh = true
        slotLock.unlock()
        wake.signal()
    }

    func run() {
        ThreadPriority.lowerCurrent(nice: 10)
        while true {
            wake.wait()
            if stopping.load(ordering: .relaxed) { return }
            slotLock.lock()
            guard fresh else {
                slotLock.unlock()
                continue
            }
            let m = LinkMessage.preview(
                frameIndex: slotIndex, timeNs: slotTimeNs, width: UInt16(slotWidth), height: UInt16(slotHeight),
                luma: Array(slot[0..<(slotWidth * slotHeight)]))
            fresh = false
            slotLock.unlock()
            // Only if the socket can take it now: a preview that would wait is already old.
            guard let ready = try? Socket.poll(connection.fd, events: Int16(POLLOUT), timeoutMs: 0),
                ready & Int16(POLLOUT) != 0
            else {
                shedCount.add(1, ordering: .relaxed)
                continue
            }
            do {
                try connection.send(m)
                sentCount.add(1, ordering: .relaxed)
            } catch {
                return  // the host went away: the preview is absent from now on; capture is not affected
            }
        }
    }

    /// Closes the channel; the sender thread ends.
    public func close() {
        stopping.store(true, ordering: .relaxed)
        wake.signal()
        connection.shutdownNow()
    }
}
