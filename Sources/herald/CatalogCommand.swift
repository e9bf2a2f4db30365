import ArgumentParser
import HeraldApp

struct CatalogCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "catalog",
        abstract: "Work with a notification catalog.",
        subcommands: [CatalogCheckCommand.self]
    )
}

struct CatalogCheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Load and type-check a catalog; exit 1 if it has errors.",
        discussion: "Every error and warning names its file and key. See docs/catalog.md."
    )

    @Argument(help: "The catalog directory.")
    var directory = "catalog"

    func run() throws {
        let report = CatalogTool.check(directory: directory)
        for line in report.lines { print(line) }
        if report.hasErrors { throw ExitCode(1) }
    }
}

struct RenderCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "render",
        abstract: "Show what one event renders to (title, subtitle, body, deep link, data)."
    )

    @Option(help: "The catalog directory.")
    var catalog = "catalog"

    @Option(help: "A CloudEvents JSON file (structured mode).")
    var event: String

    @Option(help: "The recipient's locale (BCP 47); default: the catalog's default locale.")
    var locale: String?

    @Option(help: "The recipient's IANA time zone.")
    var timeZone = "UTC"

    @Flag(help: "Print JSON instead of text.")
    var json = false

    func run() throws {
        do {
            let rendered = try CatalogTool.render(
                catalogDirectory: catalog,
                eventFile: event,
                locale: locale,
                timeZone: timeZone
            )
            print(json ? CatalogTool.json(rendered) : CatalogTool.text(rendered, timeZone: timeZone))
        } catch {
            printError(error.description)
            throw ExitCode(1)
        }
    }
}
