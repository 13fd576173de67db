/// Values options and arguments carry that more than one command reads: each parsed in one place, its errors naming
/// the option (or argument) and the value.

/// HOST:PORT — a name or an IPv4 address, and a port.
public struct Endpoint: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `text`; the port must lie in `ports` (1…65535 to connect to; 0…65535 where the kernel may pick one).
    /// A usage error names `option` (`--listen 'x': …`) or, without one, only the value.
    public init(_ text: String, option: String? = nil, ports: ClosedRange<Int> = 1...65535) throws(CommandFailure) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[1].allSatisfy(\.isASCII), let port = Int(parts[1]),
            ports.contains(port)
        else {
            throw CommandFailure.usage(
                "\(option.map { "--\($0) " } ?? "")'\(text)': expected HOST:PORT (port \(ports.lowerBound)–\(ports.upperBound))"
            )
        }
        self.init(host: String(parts[0]), port: port)
    }

    public var description: String { "\(host):\(port)" }
}

/// WIDTHxHEIGHT, in pixels.
public struct FrameSize: Sendable, Equatable, CustomStringConvertible {
    public var width: Int
    public var height: Int

    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// Parses `text` as WIDTHxHEIGHT, each side 1…`largest` (and even, with at least `minimumWidth`, where an encoder
    /// needs it). A usage error names `option` and the value.
    public init(_ text: String, option: String, even: Bool = false, minimumWidth: Int = 1, largest: Int = 16_384)
        throws(CommandFailure)
    {
        let sides = text.split(separator: "x", omittingEmptySubsequences: false)
        let wanted = "WIDTHxHEIGHT\(even ? ", both even" : ""), width \(minimumWidth)–\(largest), height 1–\(largest)"
        guard sides.count == 2, sides.allSatisfy({ $0.allSatisfy(\.isASCII) }), let w = Int(sides[0]),
            let h = Int(sides[1]), (minimumWidth...largest).contains(w), (1...largest).contains(h),
            !even || (w % 2 == 0 && h % 2 == 0)
        else { throw CommandFailure.usage("--\(option) '\(text)': expected \(wanted)") }
        self.init(width: w, height: h)
    }

    public var description: String { "\(width)x\(height)" }
}

extension Invocation {
    /// `--name` as HOST:PORT (or `default` when not given), ports held to `ports`.
    public func endpoint(_ name: String, default fallback: String? = nil, ports: ClosedRange<Int> = 1...65535)
        throws(CommandFailure) -> Endpoint?
    {
        guard let text = value(name) ?? fallback else { return nil }
        return try Endpoint(text, option: name, ports: ports)
    }

    /// `--name` as WIDTHxHEIGHT (or `default` when not given).
    public func frameSize(_ name: String, default fallback: String? = nil, even: Bool = false, minimumWidth: Int = 1)
        throws(CommandFailure) -> FrameSize?
    {
        guard let text = value(name) ?? fallback else { return nil }
        return try FrameSize(text, option: name, even: even, minimumWidth: minimumWidth)
    }
}
