import ALSASource
import Detectors
import FileSink
import IMUFile
import LibavEncoder
import MediaSource
import NetworkSink
import Pipeline
import Synthetic
import V4L2Source
import ZstdCodec

/// The plugins built into ppc-tool, registered in the process-wide registry at start.
enum BuiltinPlugins {
    static let all: [PluginFactory] =
        SyntheticPlugins.all + LibavEncoderPlugins.all + [ZstdFragmentEncoder.factory] + MediaSource.all + [
            FileSink.factory, NetworkSink.factory, ImpactDetectorStage.factory, V4L2Source.factory, ALSASource.factory,
            IMUFileSource.factory,
        ]

    static func registerAll() {
        for f in all { try! PluginRegistry.default.register(f) }
    }
}
