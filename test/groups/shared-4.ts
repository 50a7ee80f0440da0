await (await import('./members.ts')).importShare(3, 8)
