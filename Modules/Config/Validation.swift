import Foundation

extension Configuration {
    /// Every rule the values in force break, each message naming the keys and values involved.
    /// An empty result means the configuration is valid.
    public func validate() -> [ConfigError.Problem] {
        var problems: [ConfigError.Problem] = []
        for p in parameters {
            for c in p.definition.constraints {
                if let message = c.violation(key: p.key, value: p.value, unit: p.unit) {
                    problems.append(.init(.constraintViolated, key: p.key, message))
                }
            }
        }
        // Cross-parameter rules only make sense once each value is individually sane.
        guard problems.isEmpty else { return problems }

        let fragmentSeconds = real("capture.fragmentSeconds")
        let fragmentNs = integer("capture.fragmentNs")
        if abs(fragmentSeconds * Catalog.nsPerSecond - Double(fragmentNs)) > 0.5 || fragmentNs <= 0 {
            problems.append(
                .init(
                    .constraintViolated, key: "capture.fragmentSeconds",
                    "capture.fragmentSeconds = \(ParameterValue.format(fragmentSeconds)) s is not a whole number of nanoseconds"
                ))
        }
        let fps = integer("capture.expectedFrameRate")
        let frames = real("capture.framesPerFragment")
        if abs(frames - frames.rounded()) > 1e-9 {
            problems.append(
                .init(
                    .constraintViolated, key: "capture.fragmentSeconds",
                    "capture.fragmentSeconds = \(ParameterValue.format(fragmentSeconds)) s at capture.expectedFrameRate = \(fps) fps is \(ParameterValue.format(frames)) frames; a fragment must be a whole number of frames"
                ))
        }

        let pre = integer("capture.clipPreNs")
        let post = integer("capture.clipPostNs")
        let ringNs = fragmentNs * integer("capture.fragmentCapacity")
        if pre + post + fragmentNs > ringNs {
            problems.append(
                .init(
                    .constraintViolated, key: "capture.clipPostNs",
                    "capture.clipPreNs (\(pre) ns) + capture.clipPostNs (\(post) ns) = \(Format.seconds(pre + post)) must fit in capture.ringSeconds (\(Format.seconds(ringNs))) with one fragment (\(Format.seconds(fragmentNs))) to spare (with capture.sealPostRollEarly, each shot's cut still in the ring takes up to a fragment more)"
                ))
        }

        let window = integer("detect.audioWindowNs")
        let audioPre = integer("detect.audioPreNs")
        if audioPre >= window {
            problems.append(
                .init(
                    .constraintViolated, key: "detect.audioPreNs",
                    "detect.audioPreNs (\(audioPre) ns) must be shorter than detect.audioWindowNs (\(window) ns)"))
        }
        return problems
    }
}

/// A disagreement in the source documents that ppc surfaces rather than buries. Its text is built from the values in
/// force, so it never states a number the configuration does not hold.
public struct Contradiction: Sendable {
    public let id: String
    public let keys: [String]
    public let text: String
}

extension Configuration {
    /// The seed's known contradictions, as they stand with the values in force.
    public var contradictions: [Contradiction] {
        var out: [Contradiction] = []
        let burst = integer("link.syncBurstTarget")
        out.append(
            Contradiction(
                id: "sync-burst-count", keys: ["link.syncBurstTarget"],
                text:
                    "link.syncBurstTarget is \(burst) probes; the iOS app's user-facing strings say \"twenty\". Every text ppc shows derives the count from the parameter: a link syncs with a burst of \(burst) probes."
            ))

        let clipNs = integer("capture.clipWindowNs")
        let prdSeconds = real("session.prdClipSeconds")
        let shots = integer("session.shots")
        if abs(Double(clipNs) / Catalog.nsPerSecond - prdSeconds) > 1e-9 {
            out.append(
                Contradiction(
                    id: "clip-window-vs-prd",
                    keys: ["capture.clipPreNs", "capture.clipPostNs", "session.prdClipSeconds"],
                    text:
                        "The clip window is \(Format.seconds(clipNs)) (capture.clipPreNs + capture.clipPostNs) but PRD §16.2 sizes a session with \(ParameterValue.format(prdSeconds)) s clips: \(shots) shots are \(ParameterValue.format(real("session.volumeSeconds"))) s and \(Format.bytes(integer("session.volumeBytes"))), not \(ParameterValue.format(Double(shots) * prdSeconds)) s and \(Format.bytes(integer("session.prdVolumeBytes"))). ppc uses the real window."
                ))
        }
        out.append(
            Contradiction(
                id: "storage-floor-unset", keys: ["device.storageFloorBytes"],
                text:
                    "REQ-OFF-2 requires refusing to arm below a storage floor and gives no value. ppc proposes \(Format.bytes(integer("device.storageFloorBytes"))) (derived: one session plus the ring), not the PRD's implied \(Format.bytes(integer("session.prdVolumeBytes"))). It is a proposal, marked derived, not a decision."
            ))
        return out
    }
}

/// Human formatting of durations and sizes in messages.
public enum Format {
    /// Nanoseconds as seconds, e.g. `4.5 s`.
    public static func seconds(_ ns: Int64) -> String {
        "\(ParameterValue.format(Double(ns) / Catalog.nsPerSecond)) s"
    }

    /// Bytes in decimal units, e.g. `62.5 MB`, `1.47 GB`.
    public static func bytes(_ n: Int64) -> String {
        let d = Double(n)
        switch d {
        case 1e9...: return String(format: "%.2f GB", d / 1e9)
        case 1e6...: return String(format: "%.1f MB", d / 1e6)
        case 1e3...: return String(format: "%.1f kB", d / 1e3)
        default: return "\(n) B"
        }
    }
}

/// Suggests the nearest valid name for a misspelt one.
public enum Spelling {
    /// The candidate closest to `word` by edit distance, if it is close enough to be a plausible typo.
    public static func nearest<S: Sequence>(to word: String, among candidates: S) -> String? where S.Element == String {
        // Smallest edit distance; ties go to the longer shared prefix, then alphabetical order.
        var best: (name: String, distance: Int, prefix: Int)?
        let w = word.lowercased()
        for c in candidates {
            let lc = c.lowercased()
            let d = distance(w, lc)
            let prefix = zip(w, lc).prefix { $0 == $1 }.count
            if let b = best, (d, -prefix, c) >= (b.distance, -b.prefix, b.name) { continue }
            best = (c, d, prefix)
        }
        guard let (name, d, _) = best else { return nil }
        return d <= max(2, word.count / 3) ? name : nil
    }

    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a.utf8)
        let b = Array(b.utf8)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var row = Array(0...b.count)
        for i in 1...a.count {
            var prev = row[0]
            row[0] = i
            for j in 1...b.count {
                let cur = row[j]
                row[j] = min(row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] == b[j - 1] ? 0 : 1))
                prev = cur
            }
        }
        return row[b.count]
    }
}
