import Foundation
import JSONInput
import Syscall

/// The bays of a host's library: which devices stand at each bay, in the order their angles are shown (face-on left,
/// down-the-line right) — kept in `LIBRARY/bays.json`, set from the studio or `ppc-host bay`.
///
/// A device's bay is the host's setting when it has one, else what the device said (`ppc-tool run --bay`). A shot one
/// device of a bay hears is relayed to the others; a swing's angles are the bay's; its pages show them in the bay's
/// order, devices the bay does not list after those it does, as they arrived.
public final class Bays: @unchecked Sendable {
    // @unchecked: `plan` is behind `lock`.
    public struct Bay: Codable, Sendable, Equatable {
        public var name: String
        /// The bay's devices, in the order their angles are shown.
        public var devices: [String]
        public init(name: String, devices: [String]) {
            self.name = name
            self.devices = devices
        }
    }

    public struct Plan: Codable, Sendable, Equatable {
        public var bays: [Bay]
        public init(bays: [Bay]) { self.bays = bays }

        /// What in the plan cannot stand, naming the bay or device: a name that is not a plain name, a bay named twice,
        /// a device in two bays or twice in one, more than 64 bays or 16 devices a bay.
        public var problem: String? {
            guard bays.count <= 64 else { return "\(bays.count) bays: at most 64" }
            var names = Set<String>()
            var devices = [String: String]()
            for (i, b) in bays.enumerated() {
                if let why = PlainName.problem(b.name, what: "bays[\(i)].name") { return why }
                guard names.insert(b.name).inserted else { return "bays[\(i)].name '\(b.name)': a bay named twice" }
                guard b.devices.count <= 16 else { return "bay '\(b.name)': \(b.devices.count) devices, at most 16" }
                for (k, d) in b.devices.enumerated() {
                    if let why = PlainName.problem(d, what: "bays[\(i)].devices[\(k)]") { return why }
                    if let other = devices[d] {
                        return "device '\(d)' is in bay '\(other)' and in bay '\(b.name)': a device stands at one bay"
                    }
                    devices[d] = b.name
                }
            }
            return nil
        }
    }

    public static let fileName = "bays.json"
    public let path: String
    private let lock = NSLock()
    private var current: Plan

    /// The bays of `library`; none when it has no bays.json. One that does not read is an error naming it.
    public init(library: String) throws {
        path = "\(library)/\(Self.fileName)"
        current = Plan(bays: [])
        guard let plan = try LibraryFile.read(Plan.self, from: path, limit: 1 << 20, what: "a library's bays") else {
            return
        }
        if let why = plan.problem { throw LibraryError("\(path): \(why)") }
        current = plan
    }

    public var plan: Plan {
        lock.lock()
        defer { lock.unlock() }
        return current
    }

    /// Replaces the bays, kept in bays.json (whole or not at all); refused, naming what, when the plan cannot stand.
    public func set(_ plan: Plan) throws {
        if let why = plan.problem { throw LibraryError(why) }
        lock.lock()
        defer { lock.unlock() }
        try LibraryFile.write(plan, to: path)
        current = plan
    }

    /// The bay the host set for `device`, or nil.
    public func bay(of device: String) -> String? { plan.bays.first { $0.devices.contains(device) }?.name }

    /// Where `device`'s angle goes among its bay's (0 first); nil when its bay does not list it.
    public func place(of device: String) -> Int? {
        for b in plan.bays { if let i = b.devices.firstIndex(of: device) { return i } }
        return nil
    }
}
