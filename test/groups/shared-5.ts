await (await import('./members.ts')).importShare(4, 8)
