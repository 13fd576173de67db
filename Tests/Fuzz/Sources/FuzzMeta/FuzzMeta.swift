import Catalogue
import Foundation
import FuzzDriver
import Glibc
import PayloadSource

/// A clip's meta.json as a host reads it — from a device it paired with, careless or hostile, or from a library's disk —
/// and the annotations.json beside it (the input split at its first NUL). Properties held for every input:
/// - `ClipMeta.read` never traps: it reads the meta or refuses it naming the file; `verifyBundle` and
///   `ClipAnnotations.read` on the same folder never trap;
/// - what reads is in range (`problem` is nil), so the arithmetic its readers do cannot overflow: t0 less the clip's
///   time zero, t0 moved onto the host clock by an offset at its bound and back, the files' bytes summed, t0 as an
///   audio sample index;
/// - what reads re-encodes to a meta.json that reads back the same.
@_cdecl("FuzzMeta_main")
func fuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv)
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzMeta(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = fuzzInput(data, size)
    let dir = scratchFolder(bytes, name: "meta", first: "meta.json", second: ClipAnnotations.fileName)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    FileManager.default.createFile(atPath: "\(dir)/clip.mp4", contents: Data(repeating: 7, count: 10))
    _ = try? ClipAnnotations.read(dir)
    _ = ClipMeta.bundleProblem(dir, besides: [ClipAnnotations.fileName])
    let meta: ClipMeta
    do { meta = try ClipMeta.read("\(dir)/meta.json") } catch {
        guard let e = error as? PayloadError, e.code == .badBundle, e.message.contains("meta.json") else {
            fatalError("a refused meta.json is not named: \(error)")
        }
        return 0
    }
    precondition(meta.problem == nil, "read accepted what problem refuses")
    func no(_ r: (partialValue: Int64, overflow: Bool), _ what: String) -> Int64 {
        precondition(!r.overflow, "\(what) overflows")
        return r.partialValue
    }
    let sinceZero = no(meta.t0Ns.value.subtractingReportingOverflow(meta.window.clipTimeZeroNs), "t0 − time zero")
    for offset in [ClipMeta.maxTimeNs, -ClipMeta.maxTimeNs] {
        let t0Host = no(meta.t0Ns.value.addingReportingOverflow(offset), "t0 + offset")
        _ = no(t0Host.subtractingReportingOverflow(sinceZero), "the video's time zero on the host clock")
    }
    _ = meta.files.values.reduce(Int64(0)) {
        no($0.addingReportingOverflow(Int64($1.bytes)), "the files' bytes summed")
    }
    if let a = meta.audio {
        let first = a.firstSampleNs?.value ?? meta.window.startNs
        let per = a.nsPerSample?.value ?? 1e9 / Double(a.sampleRate)
        let sample =
            (Double(no(meta.t0Ns.value.subtractingReportingOverflow(first), "t0 − the audio's first sample")) / per)
            .rounded()
        precondition(abs(sample) < 9e18, "t0 as an audio sample is no Int")
        _ = no(first.subtractingReportingOverflow(meta.window.clipTimeZeroNs), "the audio's start in the video")
    }
    guard let again = try? meta.encoded() else { fatalError("a meta.json that read does not encode") }
    FileManager.default.createFile(atPath: "\(dir)/meta.json", contents: again)
    guard let back = try? ClipMeta.read("\(dir)/meta.json") else {
        fatalError("a meta.json that read does not read back re-encoded")
    }
    precondition(back == meta, "meta.json does not round-trip")
    return 0
}
