await (await import('./members.ts')).importShare(5, 8)
