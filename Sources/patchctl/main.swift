import Foundation

exit(PatchCtl.main(Array(CommandLine.arguments.dropFirst())))
