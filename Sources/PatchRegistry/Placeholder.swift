import PatchCore
