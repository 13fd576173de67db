import Foundation
import Pipeline
import Syscall

/// Why an IMU file cannot be read: the file, the line (1-based) and what is wrong there.
public struct IMUFileError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ path: String, line: Int? = nil, _ what: String) {
        description = "\(path)\(line.map { ":\($0)" } ?? ""): \(what)"
    }
}

/// `file.imu`: a recorded IMU (CoreMotion's, a phone's or a sensor board's log) as comma-separated values, one sample a
/// line, streamed as it is read — an hour at 1 kHz costs the same memory as a second. The first line that is not empty
/// and not a `#` comment is the header, naming the columns in any order: a time (`timeNs`, integer nanoseconds, or
/// `timeSeconds`), acceleration `ax`, `ay`, `az` and rotation rate `gx`, `gy`, `gz`; other columns are ignored.
/// Times are on the recording's clock, plus `offsetNs` (where the recording's time zero lies on the session's capture
/// clock: 0 for a `file` video recorded with it), and must increase. Any line that does not read is refused, naming
/// the file, the line, the column and the value: no sample is skipped without a word.
public final class IMUFileSource: IMUSource {
    public enum AccelerationUnit: String, CaseIterable {
        case metresPerSecondSquared = "m/s2"
        case g
    }
    public enum RotationUnit: String, CaseIterable {
        case radiansPerSecond = "rad/s"
        case degreesPerSecond = "deg/s"
    }

    /// The longest line read (a sample is some tens of bytes): a file with no newline is refused, not read whole.
    public static let maxLineBytes = 4096
    /// The largest acceleration (m/s²) or rotation rate (rad/s) taken: 10 000, beyond any inertial sensor's range
    /// (high-g accelerometers read ±400 g, 3 900 m/s²; gyroscopes ±4 000 °/s, 70 rad/s). Assumed.
    public static let maxMagnitude = 10_000.0
    /// The fastest IMU taken, Hz (the session sizes its IMU ring by the rate; `synthetic.imu`'s bound too).
    public static let maxRateHz = 10_000
    /// Standard gravity, m/s² per g (CoreMotion gives acceleration in g).
    public static let standardGravity = 9.806_65
    /// The largest magnitude of a time, ns (±2^60, as a clip's meta.json allows).
    public static let maxTimeNs: Int64 = 1 << 60

    public let path: String
    /// Samples per second, from the median interval of the first samples (nominal 100 when the file holds fewer than two).
    public private(set) var rateHz: Int = 100
    let offsetNs: Int64
    let accelerationScale: Double, rotationScale: Double

    let file: FileDescriptor
    /// Read buffer: bytes `start..<end` are read and not yet parsed; `offset` is the file position of `end`.
    var buffer: [UInt8]
    var start = 0, end = 0, offset: Int64 = 0, atEOF = false
    var lineNumber = 0
    /// Column index of each field we read: time, ax, ay, az, gx, gy, gz.
    var columns: [Int] = []
    var timeInSeconds = false
    var columnNames: [String] = []
    /// Values of the current line's fields we read (by position in `columns`); a NUL-terminated scratch for strtod.
    var values = [Double](repeating: 0, count: 7)
    var scratch = [CChar](repeating: 0, count: 64)
    var lastTimeNs = Int64.min
    /// The current line's time when the file gives integer nanoseconds (`timeNs`).
    var integerTimeNs: Int64 = 0
    /// Samples read ahead in `init` (to refuse a bad header at once and measure the rate), given out first.
    var readAhead: [IMUSample] = []
    var readAheadIndex = 0

    public init(
        path: String, offsetNs: Int64 = 0, acceleration: AccelerationUnit = .metresPerSecondSquared,
        rotation: RotationUnit = .radiansPerSecond
    ) throws {
        self.path = path
        self.offsetNs = offsetNs
        accelerationScale = acceleration == .g ? Self.standardGravity : 1
        rotationScale = rotation == .degreesPerSecond ? Double.pi / 180 : 1
        do { file = try FileDescriptor.openRegularFile(path) } catch {
            // A manifest's relative path is the working directory's, not the manifest's folder: say which was meant.
            let from = path.hasPrefix("/") ? "" : " (a relative path, from \(FileManager.default.currentDirectoryPath))"
            throw IMUFileError(path, "\(error)\(from)")
        }
        buffer = [UInt8](repeating: 0, count: 64 << 10)
        try readHeader()
        while readAhead.count < 17, let s = try parseNext() { readAhead.append(s) }
        if readAhead.count >= 2 {
            let intervals = zip(readAhead.dropFirst(), readAhead).map { $0.timeNs - $1.timeNs }.sorted()
            let median = intervals[intervals.count / 2]
            rateHz = max(1, Int((1e9 / Double(median)).rounded()))
            guard rateHz <= Self.maxRateHz else {
                throw IMUFileError(
                    path,
                    "samples \(median) ns apart (\(rateHz) Hz, the median of the first): above \(Self.maxRateHz) Hz, faster than an IMU a session indexes (are the times in ns, not µs?)"
                )
            }
            rateMeasured = true
        }
    }

    public func next() throws -> IMUSample? {
        if readAheadIndex < readAhead.count {
            readAheadIndex += 1
            return readAhead[readAheadIndex - 1]
        }
        return try parseNext()
    }

    // MARK: Lines

    /// The next line's bytes `from..<to` in `buffer` (without its newline or a carriage return), or nil at the end.
    func nextLine() throws -> (from: Int, to: Int)? {
        while true {
            if let nl = buffer[start..<end].firstIndex(of: UInt8(ascii: "\n")) {
                let line = (start, nl > start && buffer[nl - 1] == UInt8(ascii: "\r") ? nl - 1 : nl)
                start = nl + 1
                lineNumber += 1
                return line
            }
            if end - start > Self.maxLineBytes {
                throw IMUFileError(
                    path, line: lineNumber + 1,
                    "a line longer than \(Self.maxLineBytes) bytes: not an IMU sample (is this the IMU log?)")
            }
            if atEOF {
                guard end > start else { return nil }
                let line = (start, end)  // the last line, without a newline
                start = end
                lineNumber += 1
                return line
            }
            // Move what is left to the front and read more.
            if start > 0 {
                buffer.withUnsafeMutableBufferPointer { b in
                    for i in 0..<(end - start) { b[i] = b[start + i] }
                }
                end -= start
                start = 0
            }
            let n: Int
            do {
                n = try buffer.withUnsafeMutableBytes { b in
                    try file.read(into: UnsafeMutableRawBufferPointer(rebasing: b[end...]), at: offset)
                }
            } catch { throw IMUFileError(path, "\(error)") }
            if n == 0 { atEOF = true }
            end += n
            offset += Int64(n)
        }
    }

    func isBlankOrComment(_ l: (from: Int, to: Int)) -> Bool {
        var i = l.from
        while i < l.to, buffer[i] == UInt8(ascii: " ") || buffer[i] == UInt8(ascii: "\t") { i += 1 }
        return i == l.to || buffer[i] == UInt8(ascii: "#")
    }

    func readHeader() throws {
        while let l = try nextLine() {
            if isBlankOrComment(l) { continue }
            guard let text = String(validating: buffer[l.from..<l.to], as: UTF8.self) else {
                throw IMUFileError(path, line: lineNumber, "the header is not UTF-8 text")
            }
            columnNames = text.split(separator: ",", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            func column(_ name: String) throws -> Int? {
                let found = columnNames.indices.filter { columnNames[$0] == name }
                guard found.count <= 1 else {
                    throw IMUFileError(path, line: lineNumber, "column '\(name)' appears \(found.count) times")
                }
                return found.first
            }
            let ns = try column("timeNs")
            let seconds = try column("timeSeconds")
            guard (ns == nil) != (seconds == nil) else {
                throw IMUFileError(
                    path, line: lineNumber,
                    "the header names \(ns == nil ? "no" : "two") time column\(ns == nil ? "" : "s"): one of timeNs (integer ns) or timeSeconds; it has \(columnNames.map { "'\($0)'" }.joined(separator: ", ")) (expected a header such as timeNs,ax,ay,az,gx,gy,gz)"
                )
            }
            timeInSeconds = seconds != nil
            columns = [ns ?? seconds!]
            for name in ["ax", "ay", "az", "gx", "gy", "gz"] {
                guard let c = try column(name) else {
                    throw IMUFileError(
                        path, line: lineNumber,
                        "the header has no column '\(name)' (expected timeNs or timeSeconds, ax, ay, az, gx, gy, gz)")
                }
                columns.append(c)
            }
            return
        }
        throw IMUFileError(path, "no header line (expected e.g. timeNs,ax,ay,az,gx,gy,gz, then one sample a line)")
    }

    /// The next sample, or nil at the end of the file.
    func parseNext() throws -> IMUSample? {
        while let l = try nextLine() {
            if isBlankOrComment(l) { continue }
            try parseFields(l)
            let t = try time()
            guard t > lastTimeNs else {
                throw IMUFileError(
                    path, line: lineNumber,
                    "\(columnNames[columns[0]]) goes back or stands still (\(t) ns after \(lastTimeNs) ns): samples must be in time order"
                )
            }
            lastTimeNs = t
            try holdRate(t)
            let a = SIMD3<Float>(
                Float(values[1] * accelerationScale), Float(values[2] * accelerationScale),
                Float(values[3] * accelerationScale))
            let g = SIMD3<Float>(
                Float(values[4] * rotationScale), Float(values[5] * rotationScale), Float(values[6] * rotationScale))
            return IMUSample(timeNs: t, acceleration: a, rotationRate: g)
        }
        return nil
    }

    /// Samples a window of the rate check spans.
    static let rateWindow = 16
    /// The last `rateWindow` sample times (a ring; `timesSeen` of them valid).
    var recentTimes = [Int64](repeating: 0, count: rateWindow)
    var timesSeen = 0
    /// Whether `rateHz` was measured from the first samples (then the rest may not run more than twice as fast).
    var rateMeasured = false

    /// Holds the rate for the whole file, not only its start: over any `rateWindow` samples it may be no faster than
    /// `maxRateHz`, nor — once the rate is measured from the first samples — than twice that rate (the session sizes
    /// its IMU ring for it). Before, only the first 17 samples were judged: 17 at 10 kHz then a million a second was
    /// taken, 5.2 million samples in a 6 s session and an 8.2 MB index.bin a clip.
    func holdRate(_ t: Int64) throws {
        let slot = timesSeen % Self.rateWindow
        let windowStart = recentTimes[slot]
        recentTimes[slot] = t
        timesSeen += 1
        guard timesSeen > Self.rateWindow else { return }
        let span = t - windowStart  // positive: times only go forward
        let limitHz = rateMeasured ? min(Self.maxRateHz, 2 * rateHz) : Self.maxRateHz
        let fastest = Int64(Self.rateWindow) * 1_000_000_000 / Int64(limitHz)
        if span < fastest {
            let hz = Double(Self.rateWindow) * 1e9 / Double(max(span, 1))
            let why =
                limitHz == Self.maxRateHz
                ? "above \(Self.maxRateHz) Hz, faster than an IMU a session indexes (are the times in ns, not µs?)"
                : "more than twice the \(rateHz) Hz the file began at (a session's IMU ring is sized for that rate)"
            throw IMUFileError(
                path, line: lineNumber, "\(Self.rateWindow) samples in \(span) ns (\(Int(hz.rounded())) Hz): \(why)")
        }
    }

    /// Reads the fields this source uses from the line into `values`, each a finite number in range.
    func parseFields(_ l: (from: Int, to: Int)) throws {
        var field = 0
        var i = l.from
        var seen = 0
        while true {
            var j = i
            while j < l.to, buffer[j] != UInt8(ascii: ",") { j += 1 }
            if let k = columns.firstIndex(of: field) {
                values[k] = try number(from: i, to: j, column: field, isTime: k == 0)
                seen += 1
            }
            field += 1
            if j >= l.to { break }
            i = j + 1
        }
        guard field == columnNames.count else {
            throw IMUFileError(path, line: lineNumber, "\(field) field(s) where the header names \(columnNames.count)")
        }
        precondition(seen == columns.count)
    }

    func number(from: Int, to: Int, column: Int, isTime: Bool) throws -> Double {
        var a = from
        var b = to
        while a < b, buffer[a] == UInt8(ascii: " ") || buffer[a] == UInt8(ascii: "\t") { a += 1 }
        while b > a, buffer[b - 1] == UInt8(ascii: " ") || buffer[b - 1] == UInt8(ascii: "\t") { b -= 1 }
        func refuse(_ why: String) -> IMUFileError {
            let shown = String(decoding: buffer[from..<min(to, from + 40)], as: UTF8.self)
            return IMUFileError(path, line: lineNumber, "\(columnNames[column]) '\(shown)': \(why)")
        }
        guard b > a, b - a < scratch.count else { throw refuse(b == a ? "empty" : "not a number") }
        // Only what a number is made of: strtod also reads "nan", "inf" and hexadecimal, which no IMU log holds.
        for k in a..<b {
            switch buffer[k] {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"): continue
            case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"):
                if isTime && !timeInSeconds { throw refuse("not a whole number of nanoseconds") }
            default: throw refuse(isTime && !timeInSeconds ? "not a whole number of nanoseconds" : "not a number")
            }
        }
        if isTime && !timeInSeconds {
            // Integer nanoseconds, read exactly: a Double holds whole numbers only to 2^53 (104 days of uptime).
            var k = a
            var negative = false
            if buffer[k] == UInt8(ascii: "-") || buffer[k] == UInt8(ascii: "+") {
                negative = buffer[k] == UInt8(ascii: "-")
                k += 1
            }
            guard k < b, b - k <= 19 else { throw refuse("not a whole number of nanoseconds within ±2^60") }
            var n: Int64 = 0
            for d in k..<b {
                guard buffer[d] >= UInt8(ascii: "0") else { throw refuse("not a whole number of nanoseconds") }
                let (m, o1) = n.multipliedReportingOverflow(by: 10)
                let (r, o2) = m.addingReportingOverflow(Int64(buffer[d] - UInt8(ascii: "0")))
                guard !o1, !o2, r <= Self.maxTimeNs else { throw refuse("out of range (±2^60 ns)") }
                n = r
            }
            integerTimeNs = negative ? -n : n
            return 0
        }
        let v: Double = scratch.withUnsafeMutableBufferPointer { s in
            for k in a..<b { s[k - a] = CChar(bitPattern: buffer[k]) }
            s[b - a] = 0
            var stop: UnsafeMutablePointer<CChar>?
            let v = strtod(s.baseAddress!, &stop)
            return stop == s.baseAddress! + (b - a) ? v : .nan
        }
        guard v.isFinite else { throw refuse("not a number") }
        if !isTime, abs(v) > Self.maxMagnitude {
            throw refuse("beyond any inertial sensor's range (±\(Int(Self.maxMagnitude)))")
        }
        return v
    }

    /// The line's time on the capture clock, ns.
    func time() throws -> Int64 {
        var ns = integerTimeNs
        if timeInSeconds {
            let v = values[0] * 1e9
            guard abs(v) <= Double(Self.maxTimeNs) else {
                throw IMUFileError(path, line: lineNumber, "timeSeconds \(values[0]) is out of range (±2^60 ns)")
            }
            ns = Int64(v.rounded())
        }
        let t = ns.addingReportingOverflow(offsetNs)
        guard !t.overflow, abs(t.partialValue) <= Self.maxTimeNs else {
            throw IMUFileError(
                path, line: lineNumber,
                "\(columnNames[columns[0]]) \(ns) ns plus offsetNs \(offsetNs) is out of range (±2^60 ns)")
        }
        return t.partialValue
    }

    public static let factory = PluginFactory(
        PluginDescriptor(
            name: "file.imu", kind: .imuSource,
            summary:
                "A recorded IMU: comma-separated samples (timeNs or timeSeconds, ax, ay, az, gx, gy, gz), streamed as read.",
            parameters: [
                .init(
                    "path", .string, default: nil, "The file: a header line naming the columns, then one sample a line."
                ),
                .init(
                    "offsetNs", .integer, default: .number(0, isInteger: true), minimum: -1.0e18, maximum: 1.0e18,
                    "Added to every time: where the recording's time zero lies on the session's capture clock."),
                .init(
                    "accelerationUnit", .choice(AccelerationUnit.allCases.map(\.rawValue)), default: .string("m/s2"),
                    "m/s2, or g (CoreMotion's)."),
                .init(
                    "rotationUnit", .choice(RotationUnit.allCases.map(\.rawValue)), default: .string("rad/s"),
                    "rad/s, or deg/s."),
            ]),
        make: { p, _ in
            try IMUFileSource(
                path: p.string("path"), offsetNs: Int64(p.integer("offsetNs")),
                acceleration: AccelerationUnit(rawValue: p.string("accelerationUnit"))!,
                rotation: RotationUnit(rawValue: p.string("rotationUnit"))!)
        })
}
