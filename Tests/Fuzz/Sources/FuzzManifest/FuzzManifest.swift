import Config
import Detectors
import FileSink
import Foundation
import FuzzDriver
import LibavEncoder
import MediaSource
import NetworkSink
import Pipeline
import Synthetic
import V4L2Source
import ZstdCodec

/// Every plugin ppc-tool builds in, so manifests are checked against the real descriptors and their ranges.
let registry: PluginRegistry = {
    let all: [PluginFactory] =
        SyntheticPlugins.all + LibavEncoderPlugins.all + [ZstdFragmentEncoder.factory] + MediaSource.all
        + [FileSink.factory, NetworkSink.factory, ImpactDetectorStage.factory, V4L2Source.factory]
    return try! PluginRegistry(all)
}()

/// A manifest as a person (or a careless tool) may write it. Properties held for every input:
/// - parsing and validation never trap: a manifest is accepted or refused with problems that each name a path;
/// - what is accepted is safe to run: every integer parameter a plugin reads fits an Int, every number is finite and
///   within its declared range, the session name is a plain name, and the configuration validates.
@_cdecl("FuzzManifest_main")
func fuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv)
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzManifest(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = fuzzInput(data, size)
    guard let text = String(validating: bytes, as: UTF8.self) else { return 0 }  // the loader refuses it before parsing
    let manifest: Manifest
    do {
        manifest = try Manifest.parse(text, registry: registry)
    } catch {
        precondition(!error.problems.isEmpty, "refused without a reason")
        return 0
    }
    precondition(manifest.configuration.validate().isEmpty, "accepted a configuration that does not validate")
    for stage in manifest.sources + [manifest.encoder, manifest.detector].compactMap({ $0 }) + manifest.sinks {
        let specs = registry.factory(named: stage.plugin, kinds: [stage.kind])!.descriptor.parameters
        for spec in specs {
            guard case .number(let d, _)? = stage.parameters.values[spec.name] else { continue }
            precondition(
                d.isFinite && d >= spec.minimum! && d <= spec.maximum!,
                "\(stage.path).\(spec.name) = \(d) is outside its range")
            if spec.type == .integer {
                precondition(Int(exactly: d) != nil, "\(stage.path).\(spec.name) = \(d) is no Int")
            }
        }
    }
    return 0
}
