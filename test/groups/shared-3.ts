await (await import('./members.ts')).importShare(2, 8)
