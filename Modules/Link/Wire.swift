/// ppc's link protocol, version 1 (docs/protocol.md). Every frame:
///
/// ```
/// u8 version (1) · u8 type · u16 flags · u32 payload length · payload (little-endian fields)
/// ```
/// Strings are u16 length + UTF-8. Each type has a size limit; a frame over it, of an unknown type or version, or
/// whose payload does not decode exactly, is a ``LinkError`` — the link closes with that reason, nothing crashes.
public enum LinkMessage: Sendable, Equatable {
    public enum Channel: UInt8, Sendable {
        case control = 0
        case bulk = 1
        case preview = 2
    }

    // Control
    case hello(protocolVersion: UInt16, deviceID: String, channel: Channel, captureProfile: String)
    case helloAck(accepted: Bool, policy: String, reason: String)
    case heartbeat(sequence: UInt64, deviceTimeNs: Int64)
    case heartbeatAck(sequence: UInt64, hostTimeNs: Int64)
    case syncProbe(sequence: UInt64, t1: Int64)
    case syncReply(sequence: UInt64, t1: Int64, t2: Int64, t3: Int64)
    case relationUpdate(offsetNs: Int64, skewPpm: Double, uncertaintyNs: Int64, samples: UInt32)
    case candidate(id: UInt64, t0Ns: Int64, score: Double)
    case shot(id: UInt64, t0Ns: Int64)
    case announce(clipID: String, totalBytes: UInt64, files: UInt16)
    case interruption(id: UInt64, startNs: Int64, durationNs: Int64, reason: String)
    case bye(reason: String)
    /// The device's state, about once a second on the control channel: armed, achieved frame rate, frames dropped so far,
    /// the thermal level and hottest zone (°C, NaN when none is readable), free bytes where it stores.
    case status(
        armed: Bool, framesPerSecond: Double, framesDropped: UInt64, thermal: String, thermalCelsius: Double,
        storageFreeBytes: UInt64)
    /// What the device says of itself once its control channel is up: the bay it was told it stands at (`run --bay`;
    /// empty: none — a bay set on the host wins), and whether it hears shots itself (it has a microphone).
    case deviceInfo(bay: String, hears: Bool)
    /// Host → device: a shot a bay-mate heard, on this device's capture clock (through both devices' clock relations),
    /// with how uncertain that is and who heard it: the device mints its own window around it.
    case relayedShot(id: UInt64, t0Ns: Int64, uncertaintyNs: Int64, from: String)
    // Bulk
    case offer(clipID: String, file: String, size: UInt64, xxh3: UInt64)
    case resumeAt(clipID: String, file: String, offset: UInt64)
    /// `compressed`: the data is one zstd frame of the chunk's bytes; `xxh3` is of the uncompressed bytes.
    case chunk(offset: UInt64, xxh3: UInt64, compressed: Bool, data: [UInt8])
    case chunkAck(committedOffset: UInt64)
    case fileComplete(clipID: String, file: String, verified: Bool, reason: String)
    case clipDone(clipID: String)
    case clipConfirmed(clipID: String, path: String)
    /// A first look at a shot — its pre-roll and impact, minted as soon as they sealed — offered ahead of the clip: its
    /// t0 and first frame on the device's clock, its size and XXH3; its bytes follow as chunks from 0, each acknowledged.
    case lookOffer(clipID: String, t0Ns: Int64, zeroNs: Int64, size: UInt64, xxh3: UInt64)
    /// Host → device: the first look was stored whole (or why not). Never resumed: a first look is worth only its speed.
    case lookStored(clipID: String, stored: Bool, reason: String)
    // Preview
    /// The newest frame's luma, downscaled: live only, never queued (a frame the socket cannot take at once is shed).
    case preview(frameIndex: UInt64, timeNs: Int64, width: UInt16, height: UInt16, luma: [UInt8])

    /// The largest preview picture, pixels (width × height of 8-bit luma).
    public static let maxPreviewPixels = 320 * 180

    public static let version: UInt8 = 1
    public static let headerSize = 8
    /// The largest chunk's data.
    public static let maxChunkBytes = 1 << 20
    /// A chunk's fields before its data: u64 offset, u64 xxh3, u8 compressed, u32 length.
    public static let chunkFieldsSize = 21

    var type: UInt8 {
        switch self {
        case .hello: 1
        case .helloAck: 2
        case .heartbeat: 3
        case .heartbeatAck: 4
        case .syncProbe: 5
        case .syncReply: 6
        case .relationUpdate: 7
        case .candidate: 8
        case .shot: 9
        case .announce: 10
        case .interruption: 11
        case .bye: 12
        case .status: 13
        case .deviceInfo: 14
        case .relayedShot: 15
        case .offer: 20
        case .resumeAt: 21
        case .chunk: 22
        case .chunkAck: 23
        case .fileComplete: 24
        case .clipDone: 25
        case .clipConfirmed: 26
        case .lookOffer: 27
        case .lookStored: 28
        case .preview: 30
        }
    }

    /// The payload limit of a message type; nil for an unknown type.
    static func limit(ofType t: UInt8) -> Int? {
        switch t {
        case 3, 4, 5, 9, 23: 64
        case 6, 7, 8: 64
        case 1, 2, 10, 11, 12, 13, 14, 15, 20, 21, 24, 25, 26, 27, 28: 1024
        case 22: maxChunkBytes + 32
        case 30: maxPreviewPixels + 32
        default: nil
        }
    }

    public var name: String {
        switch self {
        case .hello: "hello"
        case .helloAck: "hello_ack"
        case .heartbeat: "heartbeat"
        case .heartbeatAck: "heartbeat_ack"
        case .syncProbe: "sync_probe"
        case .syncReply: "sync_reply"
        case .relationUpdate: "relation_update"
        case .candidate: "candidate"
        case .shot: "shot"
        case .announce: "announce"
        case .interruption: "interruption"
        case .bye: "bye"
        case .status: "status"
        case .deviceInfo: "device_info"
        case .relayedShot: "relayed_shot"
        case .offer: "offer"
        case .resumeAt: "resume_at"
        case .chunk: "chunk"
        case .chunkAck: "chunk_ack"
        case .fileComplete: "file_complete"
        case .clipDone: "clip_done"
        case .clipConfirmed: "clip_confirmed"
        case .lookOffer: "look_offer"
        case .lookStored: "look_stored"
        case .preview: "preview"
        }
    }

    /// The whole frame: header and payload.
    public func encoded() -> [UInt8] {
        var w = Writer()
        switch self {
        case .hello(let v, let d, let c, let p):
            w.u16(v)
            w.string(d)
            w.u8(c.rawValue)
            w.string(p)
        case .helloAck(let a, let p, let r):
            w.u8(a ? 1 : 0)
            w.string(p)
            w.string(r)
        case .heartbeat(let s, let t):
            w.u64(s)
            w.i64(t)
        case .heartbeatAck(let s, let t):
            w.u64(s)
            w.i64(t)
        case .syncProbe(let s, let t1):
            w.u64(s)
            w.i64(t1)
        case .syncReply(let s, let t1, let t2, let t3):
            w.u64(s)
            w.i64(t1)
            w.i64(t2)
            w.i64(t3)
        case .relationUpdate(let o, let k, let u, let n):
            w.i64(o)
            w.f64(k)
            w.i64(u)
            w.u32(n)
        case .candidate(let i, let t, let s):
            w.u64(i)
            w.i64(t)
            w.f64(s)
        case .shot(let i, let t):
            w.u64(i)
            w.i64(t)
        case .announce(let c, let b, let f):
            w.string(c)
            w.u64(b)
            w.u16(f)
        case .interruption(let i, let s, let d, let r):
            w.u64(i)
            w.i64(s)
            w.i64(d)
            w.string(r)
        case .status(let a, let f, let d, let t, let c, let b):
            w.u8(a ? 1 : 0)
            w.f64(f)
            w.u64(d)
            w.string(t)
            w.f64(c)
            w.u64(b)
        case .bye(let r): w.string(r)
        case .deviceInfo(let b, let h):
            w.string(b)
            w.u8(h ? 1 : 0)
        case .relayedShot(let i, let t, let u, let f):
            w.u64(i)
            w.i64(t)
            w.i64(u)
            w.string(f)
        case .offer(let c, let f, let s, let x):
            w.string(c)
            w.string(f)
            w.u64(s)
            w.u64(x)
        case .resumeAt(let c, let f, let o):
            w.string(c)
            w.string(f)
            w.u64(o)
        case .chunk(let o, let x, let z, let d):
            w.u64(o)
            w.u64(x)
            w.u8(z ? 1 : 0)
            w.u32(UInt32(d.count))
            w.bytes += d
        case .chunkAck(let o): w.u64(o)
        case .fileComplete(let c, let f, let v, let r):
            w.string(c)
            w.string(f)
            w.u8(v ? 1 : 0)
            w.string(r)
        case .clipDone(let c): w.string(c)
        case .clipConfirmed(let c, let p):
            w.string(c)
            w.string(p)
        case .lookOffer(let c, let t, let z, let n, let x):
            w.string(c)
            w.i64(t)
            w.i64(z)
            w.u64(n)
            w.u64(x)
        case .lookStored(let c, let ok, let r):
            w.string(c)
            w.u8(ok ? 1 : 0)
            w.string(r)
        case .preview(let i, let t, let wd, let h, let l):
            w.u64(i)
            w.i64(t)
            w.u16(wd)
            w.u16(h)
            w.bytes += l
        }
        var frame = [Self.version, type, 0, 0]
        withUnsafeBytes(of: UInt32(w.bytes.count).littleEndian) { frame += $0 }
        return frame + w.bytes
    }

    /// Checks a frame header; returns the type and payload length, or why the frame is refused.
    public static func header(_ h: [UInt8]) throws(LinkError) -> (type: UInt8, length: Int) {
        guard h.count == headerSize else {
            throw LinkError(.malformed, "truncated frame header (\(h.count) of \(headerSize) bytes)")
        }
        guard h[0] == version else {
            throw LinkError(.badVersion, "protocol version \(h[0]); this side speaks \(version)")
        }
        let length = Int(UInt32(h[4]) | UInt32(h[5]) << 8 | UInt32(h[6]) << 16 | UInt32(h[7]) << 24)
        guard let limit = limit(ofType: h[1]) else { throw LinkError(.malformed, "unknown message type \(h[1])") }
        guard length <= limit else {
            throw LinkError(.oversize, "message type \(h[1]) of \(length) bytes exceeds its limit of \(limit)")
        }
        return (h[1], length)
    }

    /// Decodes a payload of `type`; it must be consumed exactly.
    public static func decode(type: UInt8, payload: [UInt8]) throws(LinkError) -> LinkMessage {
        var r = Reader(bytes: payload)
        let m: LinkMessage
        switch type {
        case 1:
            let v = try r.u16()
            let d = try r.string()
            let c = try r.u8()
            let p = try r.string()
            guard let channel = Channel(rawValue: c) else { throw LinkError(.malformed, "hello: unknown channel \(c)") }
            m = .hello(protocolVersion: v, deviceID: d, channel: channel, captureProfile: p)
        case 2: m = .helloAck(accepted: try r.u8() == 1, policy: try r.string(), reason: try r.string())
        case 3: m = .heartbeat(sequence: try r.u64(), deviceTimeNs: try r.i64())
        case 4: m = .heartbeatAck(sequence: try r.u64(), hostTimeNs: try r.i64())
        case 5: m = .syncProbe(sequence: try r.u64(), t1: try r.i64())
        case 6: m = .syncReply(sequence: try r.u64(), t1: try r.i64(), t2: try r.i64(), t3: try r.i64())
        case 7:
            m = .relationUpdate(
                offsetNs: try r.i64(), skewPpm: try r.f64(), uncertaintyNs: try r.i64(), samples: try r.u32())
        case 8: m = .candidate(id: try r.u64(), t0Ns: try r.i64(), score: try r.f64())
        case 9: m = .shot(id: try r.u64(), t0Ns: try r.i64())
        case 10: m = .announce(clipID: try r.string(), totalBytes: try r.u64(), files: try r.u16())
        case 11:
            m = .interruption(id: try r.u64(), startNs: try r.i64(), durationNs: try r.i64(), reason: try r.string())
        case 13:
            let a = try r.u8()
            let f = try r.f64()
            let d = try r.u64()
            let t = try r.string()
            let c = try r.f64()
            let b = try r.u64()
            guard a <= 1, f.isFinite, f >= 0, !c.isInfinite else {
                throw LinkError(.malformed, "status: armed \(a), \(f) fps and \(c) °C are not a device's state")
            }
            m = .status(
                armed: a == 1, framesPerSecond: f, framesDropped: d, thermal: t, thermalCelsius: c, storageFreeBytes: b)
        case 12: m = .bye(reason: try r.string())
        case 14:
            let b = try r.string()
            let h = try r.u8()
            guard h <= 1 else { throw LinkError(.malformed, "device_info: hears \(h) is not 0 or 1") }
            m = .deviceInfo(bay: b, hears: h == 1)
        case 15:
            let i = try r.u64()
            let t = try r.i64()
            let u = try r.i64()
            let f = try r.string()
            guard u >= 0 else { throw LinkError(.malformed, "relayed_shot: uncertainty \(u) ns is negative") }
            m = .relayedShot(id: i, t0Ns: t, uncertaintyNs: u, from: f)
        case 20: m = .offer(clipID: try r.string(), file: try r.string(), size: try r.u64(), xxh3: try r.u64())
        case 21: m = .resumeAt(clipID: try r.string(), file: try r.string(), offset: try r.u64())
        case 22:
            let o = try r.u64()
            let x = try r.u64()
            let z = try r.u8()
            let n = Int(try r.u32())
            guard n <= maxChunkBytes else { throw LinkError(.oversize, "chunk of \(n) bytes exceeds \(maxChunkBytes)") }
            m = .chunk(offset: o, xxh3: x, compressed: z == 1, data: try r.take(n))
        case 23: m = .chunkAck(committedOffset: try r.u64())
        case 24:
            m = .fileComplete(
                clipID: try r.string(), file: try r.string(), verified: try r.u8() == 1, reason: try r.string())
        case 25: m = .clipDone(clipID: try r.string())
        case 26: m = .clipConfirmed(clipID: try r.string(), path: try r.string())
        case 27:
            m = .lookOffer(
                clipID: try r.string(), t0Ns: try r.i64(), zeroNs: try r.i64(), size: try r.u64(), xxh3: try r.u64())
        case 28:
            let c = try r.string()
            let ok = try r.u8()
            let why = try r.string()
            guard ok <= 1 else { throw LinkError(.malformed, "look_stored: stored \(ok) is not 0 or 1") }
            m = .lookStored(clipID: c, stored: ok == 1, reason: why)
        case 30:
            let i = try r.u64()
            let t = try r.i64()
            let wd = try r.u16()
            let h = try r.u16()
            guard Int(wd) * Int(h) <= maxPreviewPixels else {
                throw LinkError(.oversize, "preview of \(wd)x\(h) exceeds \(maxPreviewPixels) pixels")
            }
            m = .preview(frameIndex: i, timeNs: t, width: wd, height: h, luma: try r.take(Int(wd) * Int(h)))
        default: throw LinkError(.malformed, "unknown message type \(type)")
        }
        guard r.at == payload.count else {
            throw LinkError(.malformed, "\(m.name): \(payload.count - r.at) bytes left over after the last field")
        }
        return m
    }

    struct Writer {
        var bytes: [UInt8] = []
        mutating func u8(_ v: UInt8) { bytes.append(v) }
        mutating func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { bytes += $0 } }
        mutating func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { bytes += $0 } }
        mutating func u64(_ v: UInt64) { withUnsafeBytes(of: v.littleEndian) { bytes += $0 } }
        mutating func i64(_ v: Int64) { withUnsafeBytes(of: v.littleEndian) { bytes += $0 } }
        mutating func f64(_ v: Double) { u64(v.bitPattern) }
        mutating func string(_ s: String) {
            let b = Array(s.utf8.prefix(Int(UInt16.max)))
            u16(UInt16(b.count))
            bytes += b
        }
    }

    struct Reader {
        let bytes: [UInt8]
        var at = 0
        mutating func take(_ n: Int) throws(LinkError) -> [UInt8] {
            guard n >= 0, at + n <= bytes.count else {
                throw LinkError(.malformed, "truncated payload: needed \(n) bytes at offset \(at) of \(bytes.count)")
            }
            defer { at += n }
            return Array(bytes[at..<(at + n)])
        }
        mutating func u8() throws(LinkError) -> UInt8 { try take(1)[0] }
        mutating func int<T: FixedWidthInteger>(_: T.Type) throws(LinkError) -> T {
            let b = try take(MemoryLayout<T>.size)
            return b.withUnsafeBytes { T(littleEndian: $0.loadUnaligned(as: T.self)) }
        }
        mutating func u16() throws(LinkError) -> UInt16 { try int(UInt16.self) }
        mutating func u32() throws(LinkError) -> UInt32 { try int(UInt32.self) }
        mutating func u64() throws(LinkError) -> UInt64 { try int(UInt64.self) }
        mutating func i64() throws(LinkError) -> Int64 { try int(Int64.self) }
        mutating func f64() throws(LinkError) -> Double { Double(bitPattern: try u64()) }
        mutating func string() throws(LinkError) -> String {
            let n = Int(try u16())
            let b = try take(n)
            guard let s = String(validating: b, as: UTF8.self) else {
                throw LinkError(.malformed, "string at offset \(at - n) is not UTF-8")
            }
            return s
        }
    }
}

/// A link was refused or broken: malformed, oversize or wrong-version input, a dead peer, a socket error.
public struct LinkError: Error, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }
        public var description: String { name }
        public static let malformed = Code("malformed")
        public static let oversize = Code("oversize")
        public static let badVersion = Code("bad-version")
        public static let closed = Code("closed")
        /// The peer said bye (its reason is the error's) and is closing: it is stopping, not gone.
        public static let bye = Code("bye")
        public static let io = Code("io")
        public static let refused = Code("refused")
        public static let protocolViolation = Code("protocol")
        public static let deadPeer = Code("dead-peer")
        /// A message began and did not arrive whole within its deadline (one byte and then silence, or a trickle).
        public static let stalled = Code("stalled")
        /// A transfer stopped because policy kept it paused past its limit (the clip waits; nothing is lost).
        public static let yielded = Code("yielded")
        /// An encrypted record failed to open: altered, replayed, reordered or one before it dropped.
        public static let tampered = Code("tampered")
        /// The handshake failed: a key that is not the one pinned, an unpaired peer, or a message not made by the peer.
        public static let unauthenticated = Code("unauthenticated")
    }

    public let code: Code
    public let reason: String
    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }
    public var description: String { "\(code): \(reason)" }
}
