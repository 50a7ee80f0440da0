await (await import('./members.ts')).importShare(0, 8)
