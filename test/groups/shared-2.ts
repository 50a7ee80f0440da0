await (await import('./members.ts')).importShare(1, 8)
