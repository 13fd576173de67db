/// One way a device can stream: an input, a pixel format, a size and a frame interval.
public struct CaptureMode: Hashable, Sendable, CustomStringConvertible {
    public let input: Int
    public let inputName: String
    public let fourcc: FourCC
    public let width: Int
    public let height: Int
    public let interval: FrameInterval
    /// The mode's timing is the incoming signal's (an HDMI input), not a choice the device offers.
    public let fromSignal: Bool

    public init(
        input: Int, inputName: String, fourcc: FourCC, width: Int, height: Int, interval: FrameInterval,
        fromSignal: Bool = false
    ) {
        self.input = input
        self.inputName = inputName
        self.fourcc = fourcc
        self.width = width
        self.height = height
        self.interval = interval
        self.fromSignal = fromSignal
    }

    public var framesPerSecond: Double { interval.framesPerSecond }
    /// Whether ppc can take frames of this pixel format: NV12 as is, YUYV converted once, Motion JPEG passed through.
    /// (H.264 from a camera is not taken: its IDR interval would have to be set to the fragment grid, which ppc does
    /// not yet do — the card says so.)
    public var usable: Bool { fourcc == .nv12 || fourcc == .yuyv || fourcc.isMotionJPEG }
    /// Raw frames, which ppc must encode itself (as opposed to frames the camera compressed).
    public var isRaw: Bool { fourcc == .nv12 || fourcc == .yuyv }
    /// Pixels a second an encoder would have to take for this mode.
    public var pixelRate: Double { Double(width * height) * framesPerSecond }
    public var description: String {
        "\(fourcc) \(width)x\(height)@\(formatRate(framesPerSecond)) on input \(input) (\(inputName))"
    }
}

func formatRate(_ fps: Double) -> String {
    let r = (fps * 100).rounded() / 100
    return r == r.rounded() ? String(Int(r)) : String(r)
}

/// What a session may ask of the selection: any of these left nil is free.
public struct ModeConstraints: Sendable, Equatable {
    public var input: Int?
    public var width: Int?
    public var height: Int?
    public var framesPerSecond: Double?
    public var fourcc: FourCC?

    public init(
        input: Int? = nil, width: Int? = nil, height: Int? = nil, framesPerSecond: Double? = nil, fourcc: FourCC? = nil
    ) {
        self.input = input
        self.width = width
        self.height = height
        self.framesPerSecond = framesPerSecond
        self.fourcc = fourcc
    }

    func admits(_ m: CaptureMode) -> Bool {
        if let i = input, m.input != i { return false }
        if let w = width, m.width != w { return false }
        if let h = height, m.height != h { return false }
        if let f = framesPerSecond, abs(m.framesPerSecond - f) > 0.05 * max(1, f) / 60 + 0.01 { return false }
        if let c = fourcc, m.fourcc != c { return false }
        return true
    }

    public var isEmpty: Bool { self == ModeConstraints() }
}

/// Seed 000 REQ-FPS-1: rank by frame rate first (rates within 0.5% count as one), then resolution (height, then width), then input (the lower index:
/// a fixed, stated tie-break, so a session never lands on a different lens by accident); at equal everything NV12
/// before YUYV (no conversion). A still-only or slow huge mode cannot win, because rate is asked first.
public enum ModeSelection {
    /// Modes in rank order, best first; modes ppc cannot take are left out. At equal rate, size and input a raw mode
    /// (NV12, then YUYV) ranks before Motion JPEG — unless `capacity` (this machine's measured encode rate) says the raw
    /// mode cannot be encoded in time, and then the camera's own compression wins.
    public static func rank(_ modes: [CaptureMode], capacity: EncodeCapacity? = nil) -> [CaptureMode] {
        func order(_ m: CaptureMode) -> Int {
            let rawFits = capacity.map { m.pixelRate <= $0.pixelsPerSecond } ?? true
            switch m.fourcc {
            case .nv12: return rawFits ? 0 : 3
            case .yuyv: return rawFits ? 1 : 4
            default: return 2
            }
        }
        return modes.filter(\.usable).sorted { a, b in
            // Rates within 0.5% are one rate: NTSC's 1000/1001 (59.94 against 60) is not worth a smaller picture.
            if !sameRate(a.framesPerSecond, b.framesPerSecond) { return a.framesPerSecond > b.framesPerSecond }
            if a.height != b.height { return a.height > b.height }
            if a.width != b.width { return a.width > b.width }
            if a.input != b.input { return a.input < b.input }
            return order(a) < order(b)
        }
    }

    /// The mode ppc would choose under `constraints`, and a sentence saying why — or why none fits. `capacity` is this
    /// machine's measured encode rate (the self-test figure), nil when none was measured.
    public static func choose(
        _ modes: [CaptureMode], _ constraints: ModeConstraints = .init(), capacity: EncodeCapacity? = nil
    ) -> (mode: CaptureMode?, why: String) {
        let ranked = rank(modes, capacity: capacity)
        let admitted = ranked.filter(constraints.admits)
        guard let best = admitted.first else {
            if ranked.isEmpty {
                let offered = Set(modes.map(\.fourcc.description)).sorted().joined(separator: ", ")
                return (
                    nil,
                    "no mode ppc can take: the device offers \(offered.isEmpty ? "no formats" : offered); ppc takes NV12 (as is), YUYV (converted once) or MJPEG (passed through)"
                )
            }
            return (nil, "no mode matches \(describe(constraints)); the best offered is \(ranked[0])")
        }
        var why =
            "the highest frame rate offered\(constraints.isEmpty ? "" : " that matches \(describe(constraints))") (\(formatRate(best.framesPerSecond)) fps)"
        let atRate = admitted.filter { sameRate($0.framesPerSecond, best.framesPerSecond) }
        if atRate.count > 1 {
            why += ", and at that rate the largest size (\(best.width)x\(best.height))"
            if atRate.contains(where: { $0.width == best.width && $0.height == best.height && $0.input != best.input })
            {
                why += ", on the lowest-numbered input that has it"
            }
        }
        switch best.fourcc {
        case .nv12: why += "; NV12 goes to the encoder without conversion"
        case .yuyv: why += "; YUYV is converted to NV12 once per frame"
        default:
            why += "; \(best.fourcc) is passed through as the camera compressed it (never decoded, never re-encoded)"
        }
        let rawAtSame = admitted.filter {
            $0.isRaw && sameRate($0.framesPerSecond, best.framesPerSecond) && $0.width == best.width
                && $0.height == best.height
        }
        if !best.isRaw, let raw = rawAtSame.first {
            if let c = capacity {
                why +=
                    " — \(raw.fourcc) at this rate and size needs \(mpx(raw.pixelRate)) Mpx/s encoded, and this machine's encoder sustained \(mpx(c.pixelsPerSecond)) Mpx/s (\(c.basis))"
            }
        } else if best.isRaw, let c = capacity, best.pixelRate > c.pixelsPerSecond {
            why +=
                " — warning: it needs \(mpx(best.pixelRate)) Mpx/s encoded and this machine's encoder sustained \(mpx(c.pixelsPerSecond)) Mpx/s (\(c.basis)); no compressed mode at this rate and size is offered, so frames will be late"
        } else if best.isRaw, capacity == nil,
            admitted.contains(where: {
                !$0.isRaw && sameRate($0.framesPerSecond, best.framesPerSecond) && $0.width == best.width
                    && $0.height == best.height
            })
        {
            why +=
                " (MJPEG is offered too; with no self-test figure on this machine raw is preferred — run `ppc-tool selftest` to measure)"
        }
        if best.fromSignal { why += "; its timing is the incoming signal's" }
        if let bigger = ranked.filter({ $0.height > best.height }).max(by: {
            $0.height * $0.width < $1.height * $1.width
        }),
            bigger.framesPerSecond < best.framesPerSecond
        {
            why +=
                " (\(bigger.width)x\(bigger.height) is larger but only \(formatRate(bigger.framesPerSecond)) fps: frame rate ranks first, seed 000 REQ-FPS-1)"
        }
        return (best, why)
    }

    static func mpx(_ r: Double) -> String { String(format: "%.1f", r / 1e6) }

    /// Whether two rates are one rate for ranking (within 0.5%).
    public static func sameRate(_ a: Double, _ b: Double) -> Bool { abs(a - b) <= 0.005 * max(a, b) }

    static func describe(_ c: ModeConstraints) -> String {
        var parts: [String] = []
        if let i = c.input { parts.append("input \(i)") }
        if let f = c.fourcc { parts.append("\(f)") }
        if let w = c.width, let h = c.height {
            parts.append("\(w)x\(h)")
        } else if let w = c.width {
            parts.append("width \(w)")
        } else if let h = c.height {
            parts.append("height \(h)")
        }
        if let r = c.framesPerSecond { parts.append("\(formatRate(r)) fps") }
        return parts.joined(separator: " ")
    }
}

/// What a device can do, read once: identity, inputs, and every (input, format, size, rate) it offers.
public struct CapabilityCard: Sendable {
    public let path: String
    public let capability: V4L2Capability
    public let inputs: [V4L2Input]
    public let modes: [CaptureMode]
    /// Formats a device lists that ppc cannot take, by input (shown, never chosen).
    public let unusableFormats: [String]
    /// The controls the device has (names), for the card.
    public let controls: [V4L2Control]
    /// What could not be read, and why (e.g. inputs not visited because another program is streaming).
    public let notes: [String]

    /// Reads the card. Visits each input (and puts the device back on the one it was on).
    public static func read(_ device: V4L2Device) throws(V4L2Error) -> CapabilityCard {
        let cap = try device.capability()
        let inputs = try device.inputs()
        let original = try device.currentInput()
        var modes: [CaptureMode] = []
        var unusable: Set<String> = []
        var notes: [String] = []
        for input in inputs.isEmpty ? [V4L2Input(index: 0, name: "default", signalTimed: false, status: 0)] : inputs {
            if !inputs.isEmpty && input.index != original {
                do { try device.selectInput(input.index) } catch  where error.kind == .busy {
                    // Another program is streaming: the input cannot be switched, so only the current one is read.
                    notes.append(
                        "input \(input.index) (\(input.name)) not read: the device is busy streaming in another program"
                    )
                    continue
                }
            } else if !inputs.isEmpty {
                try device.selectInput(input.index)
            }
            // A signal-timed input's size and rate are the incoming signal's: read once for the input, not per format.
            var signal: (format: V4L2PixelFormat, rate: FrameInterval?)?
            for f in try device.pixelFormats() {
                if f.fourcc != .nv12 && f.fourcc != .yuyv && !f.fourcc.isMotionJPEG {
                    unusable.insert("\(f.fourcc) (\(f.description))")
                }
                if !input.signalTimed, let sizes = try device.frameSizes(f.fourcc) {
                    for s in sizes {
                        for i in try device.frameIntervals(f.fourcc, width: s.width, height: s.height) {
                            modes.append(
                                CaptureMode(
                                    input: input.index, inputName: input.name, fourcc: f.fourcc, width: s.width,
                                    height: s.height, interval: i))
                        }
                    }
                } else {
                    // A signal-timed input (or no size enumeration): the size and rate are the incoming signal's, in
                    // force now; a listed size range there is what the hardware could scale to, not a mode to choose.
                    if signal == nil { signal = (try device.currentFormat(), try device.frameInterval()?.interval) }
                    let current = try device.tryFormat(
                        f.fourcc, width: signal!.format.width, height: signal!.format.height)
                    guard current.fourcc == f.fourcc else { continue }
                    if let rate = signal!.rate {
                        modes.append(
                            CaptureMode(
                                input: input.index, inputName: input.name, fourcc: f.fourcc, width: current.width,
                                height: current.height,
                                interval: rate, fromSignal: true))
                    }
                }
            }
        }
        if !inputs.isEmpty { try? device.selectInput(original) }
        return CapabilityCard(
            path: device.path, capability: cap, inputs: inputs, modes: modes, unusableFormats: unusable.sorted(),
            controls: (try? device.controls()) ?? [], notes: notes)
    }

    public init(
        path: String, capability: V4L2Capability, inputs: [V4L2Input], modes: [CaptureMode], unusableFormats: [String],
        controls: [V4L2Control], notes: [String] = []
    ) {
        self.notes = notes
        self.path = path
        self.capability = capability
        self.inputs = inputs
        self.modes = modes
        self.unusableFormats = unusableFormats
        self.controls = controls
    }

    /// The card as plain JSON values (dictionaries, arrays, strings, numbers).
    public func json(constraints: ModeConstraints = .init(), capacity: EncodeCapacity? = nil) -> [String: Any] {
        let choice = ModeSelection.choose(modes, constraints, capacity: capacity)
        func mode(_ m: CaptureMode) -> [String: Any] {
            [
                "input": m.input, "inputName": m.inputName, "pixelFormat": m.fourcc.description, "width": m.width,
                "height": m.height,
                "fps": (m.framesPerSecond * 1000).rounded() / 1000,
                "interval": "\(m.interval.numerator)/\(m.interval.denominator)",
                "fromSignal": m.fromSignal, "usable": m.usable,
            ]
        }
        var out: [String: Any] = [
            "device": path, "driver": capability.driver, "card": capability.card, "bus": capability.busInfo,
            "driverVersion": capability.versionString,
            "inputs": inputs.map {
                ["index": $0.index, "name": $0.name, "signalTimed": $0.signalTimed] as [String: Any]
            },
            "modes": modes.map(mode), "unusableFormats": unusableFormats,
            "controls": controls.map(\.name),
            "choiceWhy": choice.why, "notes": notes,
            "encodeCapacity": capacity.map {
                ["megapixelsPerSecond": $0.pixelsPerSecond / 1e6, "provenance": $0.provenance, "what": $0.what]
                    as [String: Any]
            }
                ?? "none recorded on this machine (ppc-tool selftest records it)",
        ]
        if let m = choice.mode { out["choice"] = mode(m) }
        return out
    }

    /// The card as lines for a terminal.
    public func lines(constraints: ModeConstraints = .init(), capacity: EncodeCapacity? = nil) -> [String] {
        var out = [
            "\(path): \(capability.card) (driver \(capability.driver) \(capability.versionString), \(capability.busInfo))"
        ]
        for inp in inputs {
            out.append("  input \(inp.index): \(inp.name)\(inp.signalTimed ? " (timing from the signal)" : "")")
        }
        var byKey: [String: [String]] = [:]
        var order: [String] = []
        for m in modes where m.usable {
            let key = "  input \(m.input) \(m.fourcc) \(m.width)x\(m.height)"
            if byKey[key] == nil { order.append(key) }
            byKey[key, default: []].append(formatRate(m.framesPerSecond))
        }
        for k in order { out.append("\(k) @ \(byKey[k]!.joined(separator: ", ")) fps") }
        if !unusableFormats.isEmpty {
            let shown = unusableFormats.prefix(8).map { String($0.prefix(while: { $0 != " " })) }.joined(
                separator: ", ")
            out.append(
                "  \(unusableFormats.count) formats ppc does not take (NV12 as is, YUYV converted once, MJPG passed through): \(shown)\(unusableFormats.count > 8 ? ", …" : "") (--json lists them)"
            )
        }
        if unusableFormats.contains(where: { $0.hasPrefix("H264") }) {
            out.append(
                "  H264 is not taken: passing it through needs the camera's IDR interval set to the fragment grid, which ppc does not do yet (MJPG or raw instead)"
            )
        }
        for n in notes { out.append("  ⚠ \(n)") }
        out.append(
            "  this machine's encoder: "
                + (capacity.map { String(format: "%.1f", $0.pixelsPerSecond / 1e6) + " Mpx/s (\($0.basis))" }
                    ?? "not measured (ppc-tool selftest records it; until then raw modes are preferred at equal rank)"))
        let choice = ModeSelection.choose(modes, constraints, capacity: capacity)
        if let m = choice.mode {
            out.append("ppc would choose \(m): \(choice.why)")
        } else {
            out.append("ppc cannot capture from it: \(choice.why)")
        }
        return out
    }
}
