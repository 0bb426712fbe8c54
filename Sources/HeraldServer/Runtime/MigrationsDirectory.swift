import Foundation

/// Finds the `sql/` directory that holds the migrations.
///
/// In order: the configured path; `sql/` under the working directory; `sql/` beside or above the running
/// executable (so a binary built inside the repository finds the repository's migrations from any
/// working directory).
enum MigrationsDirectory {
    static func locate(configured: String?) throws -> String {
        if let configured {
            guard isDirectory(configured) else {
                throw ConfigurationError("the migrations directory \(configured) does not exist")
            }
            return configured
        }
        guard let found = RepositoryDirectory.find("sql") else {
            throw ConfigurationError("cannot find the migrations directory sql/; pass --sql-dir or set HERALD_SQL_DIR")
        }
        return found
    }

    static func isDirectory(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
    }
}

/// Finds the demo `fixtures/` directory the same way.
enum FixturesDirectory {
    static func locate() -> String? {
        RepositoryDirectory.find("fixtures")
    }
}

/// Looks for a directory of the repository: under the working directory, then beside or above the
/// running executable.
enum RepositoryDirectory {
    /// `configured` when set (it must exist: throws, naming `what`), else `name` found as `find` finds
    /// it, else nil.
    static func locate(_ name: String, configured: String?, what: String) throws(ConfigurationError) -> String? {
        if let configured {
            guard MigrationsDirectory.isDirectory(configured) else { throw ConfigurationError("the \(what) directory \(configured) does not exist") }
            return configured
        }
        return find(name)
    }

    static func find(_ name: String) -> String? {
        var candidates = [FileManager.default.currentDirectoryPath]
        var directory = URL(fileURLWithPath: executablePath()).deletingLastPathComponent()
        for _ in 0..<6 {
            candidates.append(directory.path)
            directory = directory.deletingLastPathComponent()
        }
        return candidates.map { ($0 as NSString).appendingPathComponent(name) }.first(where: MigrationsDirectory.isDirectory)
    }

    private static func executablePath() -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

}
