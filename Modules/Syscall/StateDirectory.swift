import Foundation

/// Where a tool keeps what it learns about this machine and its peers (identities, pairings, the encode capacity a
/// selftest measured): the directory given (`--state DIR`), else `$XDG_STATE_HOME/<app>`, else `~/.local/state/<app>`.
/// One rule for every tool and module that keeps state.
public enum StateDirectory {
    public static func resolve(_ given: String? = nil, app: String) -> String {
        if let given, !given.isEmpty { return given }
        let env = ProcessInfo.processInfo.environment
        let base =
            env["XDG_STATE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? ((env["HOME"] ?? "/tmp") + "/.local/state")
        return base + "/" + app
    }
}
