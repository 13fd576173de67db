import CV4L2
import Glibc
import Syscall

/// Why a V4L2 call failed, with the device, the call and the kernel's errno — and, for the cases a person can act on
/// (no such device, busy, unplugged, not a capture device), a sentence saying so.
public struct V4L2Error: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The node does not exist (ENOENT) or is not a V4L2 node.
        case notFound
        /// Another process is streaming from it (EBUSY).
        case busy
        /// The device went away (ENODEV): unplugged, or its driver was unbound.
        case lost
        /// It does not capture video, or cannot stream with mmap.
        case unsupported
        /// The device did not honour a setting ppc asked for.
        case notHonoured
        case other
    }

    public let kind: Kind
    public let device: String
    public let operation: String
    public let errno: Int32
    public let detail: String

    public init(_ kind: Kind, device: String, operation: String, errno: Int32 = 0, _ detail: String = "") {
        self.kind = kind
        self.device = device
        self.operation = operation
        self.errno = errno
        self.detail = detail
    }

    static func from(errno e: Int32, device: String, operation: String) -> V4L2Error {
        switch e {
        case ENOENT, ENXIO: V4L2Error(.notFound, device: device, operation: operation, errno: e, "no such video device")
        case EBUSY:
            V4L2Error(
                .busy, device: device, operation: operation, errno: e,
                "the device is busy (another program is capturing from it)")
        case ENODEV:
            V4L2Error(
                .lost, device: device, operation: operation, errno: e,
                "the device is gone (unplugged or its driver unbound)")
        case ENOTTY:
            V4L2Error(
                .unsupported, device: device, operation: operation, errno: e,
                "not a V4L2 device, or the call is not supported")
        default: V4L2Error(.other, device: device, operation: operation, errno: e, String(cString: strerror(e)))
        }
    }

    public var description: String {
        let code = errno != 0 ? " (errno \(errno))" : ""
        return "\(device): \(operation): \(detail)\(code)"
    }
}

/// A FourCC pixel-format code, printable.
public struct FourCC: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public init(_ s: String) {
        let b = Array(s.utf8) + [32, 32, 32, 32]
        rawValue = UInt32(b[0]) | UInt32(b[1]) << 8 | UInt32(b[2]) << 16 | UInt32(b[3]) << 24
    }
    public static let nv12 = FourCC(rawValue: PPC_V4L2_PIX_FMT_NV12)
    public static let yuyv = FourCC(rawValue: PPC_V4L2_PIX_FMT_YUYV)
    /// Motion JPEG (`MJPG`), what most high-frame-rate USB cameras send; `JPEG` is the same on older drivers.
    public static let mjpeg = FourCC(rawValue: PPC_V4L2_PIX_FMT_MJPEG)
    public static let jpeg = FourCC(rawValue: PPC_V4L2_PIX_FMT_JPEG)
    public static let h264 = FourCC(rawValue: PPC_V4L2_PIX_FMT_H264)

    /// A format whose frames are compressed images, passed through rather than converted.
    public var isMotionJPEG: Bool { self == .mjpeg || self == .jpeg }
    /// The four characters; a big-endian variant (bit 31 set) is written with a `-BE` suffix.
    public var description: String {
        let code = rawValue & 0x7fff_ffff
        let s = String(decoding: (0..<4).map { UInt8(truncatingIfNeeded: code >> ($0 * 8)) }, as: UTF8.self)
            .trimmingSuffix(" ")
        return rawValue & 0x8000_0000 != 0 ? s + "-BE" : s
    }
}

extension String {
    fileprivate func trimmingSuffix(_ c: Character) -> String {
        var s = self
        while s.last == c { s.removeLast() }
        return s
    }
}

/// A frame interval as the kernel states it (numerator/denominator seconds), and the rate it gives.
public struct FrameInterval: Hashable, Sendable, CustomStringConvertible {
    public let numerator: UInt32
    public let denominator: UInt32
    public init(numerator: UInt32, denominator: UInt32) {
        self.numerator = numerator
        self.denominator = denominator
    }
    public var framesPerSecond: Double { numerator == 0 ? 0 : Double(denominator) / Double(numerator) }
    public var description: String { "\(numerator)/\(denominator) s" }
}

/// One V4L2 input (a connector: a camera sensor, an HDMI port).
public struct V4L2Input: Hashable, Sendable {
    public let index: Int
    public let name: String
    /// Whether the input takes its timing from a signal (HDMI, SDI: DV timings; analogue TV: a standard) rather than
    /// offering modes to choose.
    public let signalTimed: Bool
    public let status: UInt32
}

/// One open V4L2 capture node. Every ioctl goes through `ioctl(_:_:_:)`, which retries EINTR and types errno.
/// Not thread-safe: one owner (the capture thread) at a time.
public final class V4L2Device {
    public let path: String
    /// -1 once closed.
    var fd: Int32
    var mapped: [(base: UnsafeMutableRawPointer, length: Int)] = []
    public private(set) var streaming = false

    /// Opens `path` read-write and checks it is a streaming video-capture node.
    public init(path: String) throws(V4L2Error) {
        self.path = path
        do { self.fd = try Descriptor.open(path, O_RDWR | O_NONBLOCK) } catch {
            throw V4L2Error.from(errno: error.errno, device: path, operation: "open")
        }
        let cap: V4L2Capability
        do { cap = try capability() } catch {
            self.close()
            throw error
        }
        guard cap.capturesVideo else {
            self.close()
            throw V4L2Error(
                .unsupported, device: path, operation: "QUERYCAP",
                "\(cap.card) (\(cap.driver)) does not capture single-planar video")
        }
        guard cap.streams else {
            self.close()
            throw V4L2Error(
                .unsupported, device: path, operation: "QUERYCAP",
                "\(cap.card) (\(cap.driver)) cannot stream (no V4L2_CAP_STREAMING)")
        }
    }

    deinit { close() }

    /// Stops streaming, unmaps the buffers and closes the node (a driver being unloaded waits for every close).
    /// Idempotent; every later call fails with EBADF.
    public func close() {
        guard fd >= 0 else { return }
        stopStreaming()
        Descriptor.close(fd)
        fd = -1
    }

    /// One ioctl, retried on EINTR; errno becomes a ``V4L2Error`` naming `name`.
    @discardableResult
    func ioctl<T>(_ request: UInt, _ name: String, _ arg: inout T) throws(V4L2Error) -> Int32 {
        // Closed: every call fails as the kernel would say, never reaching it with a stale descriptor.
        guard fd >= 0 else { throw V4L2Error.from(errno: EBADF, device: path, operation: name) }
        do {
            return try Descriptor.ioctl(name, path: path) {
                withUnsafeMutablePointer(to: &arg) { ppc_v4l2_ioctl(fd, request, $0) }
            }
        } catch {
            throw V4L2Error.from(errno: error.errno, device: path, operation: name)
        }
    }

    /// The same, but nil where the driver answers EINVAL (the end of an enumeration, or "not this one").
    func ioctlUnlessInvalid<T>(_ request: UInt, _ name: String, _ arg: inout T) throws(V4L2Error) -> Bool {
        do {
            try ioctl(request, name, &arg)
            return true
        } catch {
            if error.errno == EINVAL || error.errno == ENOTTY { return false }
            throw error
        }
    }

    // MARK: Identity

    public func capability() throws(V4L2Error) -> V4L2Capability {
        var c = v4l2_capability()
        try ioctl(PPC_VIDIOC_QUERYCAP, "QUERYCAP", &c)
        let caps = (c.capabilities & UInt32(V4L2_CAP_DEVICE_CAPS)) != 0 ? c.device_caps : c.capabilities
        return V4L2Capability(
            driver: cString(&c.driver), card: cString(&c.card), busInfo: cString(&c.bus_info),
            version: c.version, deviceCaps: caps)
    }

    // MARK: Inputs

    public func inputs() throws(V4L2Error) -> [V4L2Input] {
        var out: [V4L2Input] = []
        for i in 0..<64 {
            var inp = v4l2_input()
            inp.index = UInt32(i)
            guard try ioctlUnlessInvalid(PPC_VIDIOC_ENUMINPUT, "ENUMINPUT", &inp) else { break }
            out.append(
                V4L2Input(
                    index: i, name: cString(&inp.name),
                    signalTimed: (inp.capabilities & UInt32(V4L2_IN_CAP_DV_TIMINGS | V4L2_IN_CAP_STD)) != 0,
                    status: inp.status))
        }
        return out
    }

    public func currentInput() throws(V4L2Error) -> Int {
        var i: Int32 = 0
        guard try ioctlUnlessInvalid(PPC_VIDIOC_G_INPUT, "G_INPUT", &i) else { return 0 }
        return Int(i)
    }

    public func selectInput(_ index: Int) throws(V4L2Error) {
        var i = Int32(index)
        try ioctl(PPC_VIDIOC_S_INPUT, "S_INPUT \(index)", &i)
    }

    // MARK: Formats

    /// The pixel formats the current input offers.
    public func pixelFormats() throws(V4L2Error) -> [(fourcc: FourCC, description: String, compressed: Bool)] {
        var out: [(FourCC, String, Bool)] = []
        for i in 0..<256 {
            var d = v4l2_fmtdesc()
            d.index = UInt32(i)
            d.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            guard try ioctlUnlessInvalid(PPC_VIDIOC_ENUM_FMT, "ENUM_FMT", &d) else { break }
            out.append(
                (
                    FourCC(rawValue: d.pixelformat), cString(&d.description),
                    (d.flags & UInt32(V4L2_FMT_FLAG_COMPRESSED)) != 0
                ))
        }
        return out
    }

    /// Discrete frame sizes of `fourcc`, or nil when the driver does not enumerate them (a signal-timed input). A
    /// stepwise or continuous range is given as its largest size and its smallest (what a ranking needs).
    public func frameSizes(_ fourcc: FourCC) throws(V4L2Error) -> [(width: Int, height: Int)]? {
        var out: [(Int, Int)] = []
        for i in 0..<256 {
            var e = v4l2_frmsizeenum()
            e.index = UInt32(i)
            e.pixel_format = fourcc.rawValue
            guard try ioctlUnlessInvalid(PPC_VIDIOC_ENUM_FRAMESIZES, "ENUM_FRAMESIZES", &e) else { break }
            if e.type == V4L2_FRMSIZE_TYPE_DISCRETE.rawValue {
                out.append((Int(e.discrete.width), Int(e.discrete.height)))
            } else {
                out.append((Int(e.stepwise.max_width), Int(e.stepwise.max_height)))
                out.append((Int(e.stepwise.min_width), Int(e.stepwise.min_height)))
                break
            }
        }
        return out.isEmpty ? nil : out
    }

    /// The frame intervals offered for one size; a stepwise range is given as its two ends.
    public func frameIntervals(_ fourcc: FourCC, width: Int, height: Int) throws(V4L2Error) -> [FrameInterval] {
        var out: [FrameInterval] = []
        for i in 0..<256 {
            var e = v4l2_frmivalenum()
            e.index = UInt32(i)
            e.pixel_format = fourcc.rawValue
            e.width = UInt32(width)
            e.height = UInt32(height)
            guard try ioctlUnlessInvalid(PPC_VIDIOC_ENUM_FRAMEINTERVALS, "ENUM_FRAMEINTERVALS", &e) else { break }
            if e.type == V4L2_FRMIVAL_TYPE_DISCRETE.rawValue {
                out.append(FrameInterval(numerator: e.discrete.numerator, denominator: e.discrete.denominator))
            } else {
                out.append(FrameInterval(numerator: e.stepwise.min.numerator, denominator: e.stepwise.min.denominator))
                out.append(FrameInterval(numerator: e.stepwise.max.numerator, denominator: e.stepwise.max.denominator))
                break
            }
        }
        return out
    }

    /// The format in force: size, FourCC, bytes per line, image size.
    public func currentFormat() throws(V4L2Error) -> V4L2PixelFormat {
        var f = v4l2_format()
        f.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        try ioctl(PPC_VIDIOC_G_FMT, "G_FMT", &f)
        return V4L2PixelFormat(f.fmt.pix)
    }

    /// Asks for a format; returns what the driver set (which may differ: callers compare).
    @discardableResult
    public func setFormat(_ fourcc: FourCC, width: Int, height: Int) throws(V4L2Error) -> V4L2PixelFormat {
        try format(PPC_VIDIOC_S_FMT, "S_FMT", fourcc, width: width, height: height)
    }

    /// What the driver would set for a format, without setting it (VIDIOC_TRY_FMT).
    public func tryFormat(_ fourcc: FourCC, width: Int, height: Int) throws(V4L2Error) -> V4L2PixelFormat {
        try format(PPC_VIDIOC_TRY_FMT, "TRY_FMT", fourcc, width: width, height: height)
    }

    func format(_ request: UInt, _ name: String, _ fourcc: FourCC, width: Int, height: Int) throws(V4L2Error)
        -> V4L2PixelFormat
    {
        var f = v4l2_format()
        f.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        f.fmt.pix.width = UInt32(width)
        f.fmt.pix.height = UInt32(height)
        f.fmt.pix.pixelformat = fourcc.rawValue
        f.fmt.pix.field = V4L2_FIELD_NONE.rawValue
        try ioctl(request, "\(name) \(fourcc) \(width)x\(height)", &f)
        return V4L2PixelFormat(f.fmt.pix)
    }

    /// The frame interval in force, and whether the driver lets it be set (V4L2_CAP_TIMEPERFRAME).
    public func frameInterval() throws(V4L2Error) -> (interval: FrameInterval, settable: Bool)? {
        var p = v4l2_streamparm()
        p.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        guard try ioctlUnlessInvalid(PPC_VIDIOC_G_PARM, "G_PARM", &p) else { return nil }
        let t = p.parm.capture.timeperframe
        return (
            FrameInterval(numerator: t.numerator, denominator: t.denominator),
            (p.parm.capture.capability & UInt32(V4L2_CAP_TIMEPERFRAME)) != 0
        )
    }

    /// Pins the frame interval (VIDIOC_S_PARM) and returns what the driver reports back.
    @discardableResult
    public func setFrameInterval(_ i: FrameInterval) throws(V4L2Error) -> FrameInterval {
        var p = v4l2_streamparm()
        p.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        p.parm.capture.timeperframe = v4l2_fract(numerator: i.numerator, denominator: i.denominator)
        try ioctl(PPC_VIDIOC_S_PARM, "S_PARM \(i)", &p)
        let t = p.parm.capture.timeperframe
        return FrameInterval(numerator: t.numerator, denominator: t.denominator)
    }

    // MARK: Controls

    /// Every control the device has, by id (enumerated with V4L2_CTRL_FLAG_NEXT_CTRL).
    public func controls() throws(V4L2Error) -> [V4L2Control] {
        var out: [V4L2Control] = []
        var id = PPC_V4L2_CTRL_FLAG_NEXT_CTRL
        for _ in 0..<1024 {
            var q = v4l2_queryctrl()
            q.id = id
            guard try ioctlUnlessInvalid(PPC_VIDIOC_QUERYCTRL, "QUERYCTRL", &q) else { break }
            id = q.id | PPC_V4L2_CTRL_FLAG_NEXT_CTRL
            if (q.flags & UInt32(V4L2_CTRL_FLAG_DISABLED)) != 0 { continue }
            out.append(
                V4L2Control(
                    id: q.id, name: cString(&q.name), minimum: q.minimum, maximum: q.maximum,
                    defaultValue: q.default_value,
                    readOnly: (q.flags & UInt32(V4L2_CTRL_FLAG_READ_ONLY)) != 0))
        }
        return out
    }

    public func control(_ id: UInt32) throws(V4L2Error) -> Int32 {
        var c = v4l2_control(id: id, value: 0)
        try ioctl(PPC_VIDIOC_G_CTRL, "G_CTRL 0x\(String(id, radix: 16))", &c)
        return c.value
    }

    public func setControl(_ id: UInt32, _ value: Int32) throws(V4L2Error) {
        var c = v4l2_control(id: id, value: value)
        try ioctl(PPC_VIDIOC_S_CTRL, "S_CTRL 0x\(String(id, radix: 16))=\(value)", &c)
    }

    // MARK: Streaming

    /// Requests `count` mmap buffers, maps and queues them all, and starts the stream. Returns how many the driver gave.
    public func startStreaming(buffers count: Int) throws(V4L2Error) -> Int {
        var req = v4l2_requestbuffers()
        req.count = UInt32(count)
        req.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        req.memory = V4L2_MEMORY_MMAP.rawValue
        try ioctl(PPC_VIDIOC_REQBUFS, "REQBUFS \(count)", &req)
        guard req.count >= 2 else {
            throw V4L2Error(
                .unsupported, device: path, operation: "REQBUFS",
                "the driver gave \(req.count) buffers; streaming needs at least 2")
        }
        for i in 0..<Int(req.count) {
            var b = v4l2_buffer()
            b.index = UInt32(i)
            b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            b.memory = V4L2_MEMORY_MMAP.rawValue
            try ioctl(PPC_VIDIOC_QUERYBUF, "QUERYBUF \(i)", &b)
            let p: UnsafeMutableRawPointer
            do { p = try Descriptor.map(fd, length: Int(b.length), offset: Int64(b.m.offset), path: path) } catch {
                throw V4L2Error.from(errno: error.errno, device: path, operation: "mmap buffer \(i)")
            }
            mapped.append((p, Int(b.length)))
            try ioctl(PPC_VIDIOC_QBUF, "QBUF \(i)", &b)
        }
        var t = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        try ioctl(PPC_VIDIOC_STREAMON, "STREAMON", &t)
        streaming = true
        return Int(req.count)
    }

    /// Waits up to `timeoutMs` for a filled buffer and dequeues it; nil on timeout. The buffer stays the caller's
    /// until `requeue(_:)`. Allocates nothing.
    public func dequeue(timeoutMs: Int32) throws(V4L2Error) -> DequeuedFrame? {
        guard fd >= 0 else { throw V4L2Error.from(errno: EBADF, device: path, operation: "poll") }
        let revents: Int16
        do { revents = try Descriptor.poll(fd, events: Int16(POLLIN), timeoutMs: timeoutMs, path: path) } catch {
            throw V4L2Error.from(errno: error.errno, device: path, operation: "poll")
        }
        if revents == 0 { return nil }
        if (revents & Int16(POLLERR | POLLHUP)) != 0 && (revents & Int16(POLLIN)) == 0 {
            // The node reports an error rather than a frame: find out which (ENODEV when unplugged).
            var b = v4l2_buffer()
            b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            b.memory = V4L2_MEMORY_MMAP.rawValue
            try ioctl(PPC_VIDIOC_DQBUF, "DQBUF", &b)
            return frame(b)
        }
        var b = v4l2_buffer()
        b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        b.memory = V4L2_MEMORY_MMAP.rawValue
        do {
            try ioctl(PPC_VIDIOC_DQBUF, "DQBUF", &b)
        } catch {
            if error.errno == EAGAIN { return nil }
            throw error
        }
        return frame(b)
    }

    func frame(_ b: v4l2_buffer) -> DequeuedFrame {
        let ts = Int64(b.timestamp.tv_sec) * 1_000_000_000 + Int64(b.timestamp.tv_usec) * 1000
        // The kernel's videobuf2 keeps bytesused within the buffer; a driver that did not would still not be read past.
        let buffer = mapped[Int(b.index)]
        return DequeuedFrame(
            index: Int(b.index),
            data: UnsafeRawBufferPointer(start: buffer.base, count: min(Int(b.bytesused), buffer.length)),
            sequence: b.sequence, timestampNs: ts, flags: b.flags)
    }

    public func requeue(_ f: DequeuedFrame) throws(V4L2Error) {
        var b = v4l2_buffer()
        b.index = UInt32(f.index)
        b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        b.memory = V4L2_MEMORY_MMAP.rawValue
        try ioctl(PPC_VIDIOC_QBUF, "QBUF \(f.index)", &b)
    }

    public func stopStreaming() {
        if streaming {
            var t = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            _ = try? ioctl(PPC_VIDIOC_STREAMOFF, "STREAMOFF", &t)
            streaming = false
        }
        unmapAll()
        var req = v4l2_requestbuffers()
        req.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        req.memory = V4L2_MEMORY_MMAP.rawValue
        _ = try? ioctl(PPC_VIDIOC_REQBUFS, "REQBUFS 0", &req)
    }

    func unmapAll() {
        for m in mapped { Descriptor.unmap(m.base, length: m.length) }
        mapped.removeAll()
    }
}

/// QUERYCAP's answer.
public struct V4L2Capability: Sendable {
    public let driver: String
    public let card: String
    public let busInfo: String
    public let version: UInt32
    public let deviceCaps: UInt32
    public var capturesVideo: Bool { (deviceCaps & UInt32(V4L2_CAP_VIDEO_CAPTURE)) != 0 }
    public var streams: Bool { (deviceCaps & UInt32(V4L2_CAP_STREAMING)) != 0 }
    public var versionString: String { "\(version >> 16).\((version >> 8) & 0xff).\(version & 0xff)" }
}

/// A format in force.
public struct V4L2PixelFormat: Sendable, Equatable, CustomStringConvertible {
    public let fourcc: FourCC
    public let width: Int
    public let height: Int
    public let bytesPerLine: Int
    public let imageBytes: Int

    init(_ p: v4l2_pix_format) {
        fourcc = FourCC(rawValue: p.pixelformat)
        width = Int(p.width)
        height = Int(p.height)
        bytesPerLine = Int(p.bytesperline)
        imageBytes = Int(p.sizeimage)
    }

    public init(fourcc: FourCC, width: Int, height: Int, bytesPerLine: Int, imageBytes: Int) {
        self.fourcc = fourcc
        self.width = width
        self.height = height
        self.bytesPerLine = bytesPerLine
        self.imageBytes = imageBytes
    }

    public var description: String { "\(fourcc) \(width)x\(height)" }
}

/// A control as QUERYCTRL describes it.
public struct V4L2Control: Sendable {
    public let id: UInt32
    public let name: String
    public let minimum: Int32
    public let maximum: Int32
    public let defaultValue: Int32
    public let readOnly: Bool
}

/// One dequeued buffer: its bytes (valid until requeued), the driver's sequence number and timestamp.
public struct DequeuedFrame {
    public let index: Int
    public let data: UnsafeRawBufferPointer
    public let sequence: UInt32
    /// The driver's timestamp, ns, on the clock `flags` names.
    public let timestampNs: Int64
    public let flags: UInt32

    /// The timestamp is CLOCK_MONOTONIC (the capture clock) rather than unknown or copied from an output.
    public var monotonicTimestamp: Bool {
        (flags & PPC_V4L2_BUF_FLAG_TIMESTAMP_MASK) == PPC_V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC
    }
    /// The timestamp marks the start of exposure (SOE) rather than the end of the frame (EOF).
    public var startOfExposure: Bool { (flags & PPC_V4L2_BUF_FLAG_TSTAMP_SRC_MASK) == PPC_V4L2_BUF_FLAG_TSTAMP_SRC_SOE }
    /// The driver marked the frame as corrupt.
    public var corrupt: Bool { (flags & PPC_V4L2_BUF_FLAG_ERROR) != 0 }
}

/// The control ids ppc locks at warm.
public enum V4L2ControlID {
    public static let exposureAuto = PPC_V4L2_CID_EXPOSURE_AUTO
    public static let exposureAutoPriority = PPC_V4L2_CID_EXPOSURE_AUTO_PRIORITY
    public static let focusAuto = PPC_V4L2_CID_FOCUS_AUTO
    public static let autoWhiteBalance = PPC_V4L2_CID_AUTO_WHITE_BALANCE
    public static let autoGain = PPC_V4L2_CID_AUTOGAIN
    public static let imageStabilization = PPC_V4L2_CID_IMAGE_STABILIZATION
    public static let autoBrightness = PPC_V4L2_CID_AUTOBRIGHTNESS
    public static let hueAuto = PPC_V4L2_CID_HUE_AUTO
    /// V4L2_EXPOSURE_MANUAL.
    public static let exposureManual: Int32 = Int32(V4L2_EXPOSURE_MANUAL.rawValue)
}

/// A fixed-size C char array as a String.
func cString<T>(_ tuple: inout T) -> String {
    withUnsafeBytes(of: &tuple) { raw in
        let bytes = raw.prefix(while: { $0 != 0 })
        return String(decoding: bytes, as: UTF8.self)
    }
}
