import LibavEncoder
import Pipeline
import Synthetic

/// The plugins built into ppc-tool, registered in the process-wide registry at start.
enum BuiltinPlugins {
    static let all: [PluginFactory] = SyntheticPlugins.all + LibavEncoderPlugins.all

    static func registerAll() {
        for f in all { try! PluginRegistry.default.register(f) }
    }
}
